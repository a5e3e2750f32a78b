"""A workspace's BM25 k1 and b: set through the API by those who manage it, and used by its searches."""

import pytest
from rest_framework.test import APIClient

from retrieval.services import SearchParams, search_passages
from sources.models import Workspace
from tests.factories import index_text

pytestmark = pytest.mark.django_db

# One occurrence of "kettle" each; the manual is much longer, so only length normalisation (b) tells
# the two apart for the query "kettle".
SHORT = "Descale the kettle."
LONG = "The kettle manual. " + " ".join(f"Section {i} covers cables, plugs and fuses." for i in range(40))


@pytest.fixture
def two_lengths(workspace, agent):
    index_text(workspace, agent, "Short", SHORT)
    index_text(workspace, agent, "Manual", LONG)


def keyword_scores(workspace_id, **params):
    passages = search_passages(
        workspace_id=workspace_id, query="kettle", params=SearchParams(mode="keyword", top_k=5, **params)
    )
    return {p.source_title: p.keyword_score for p in passages}


def test_the_defaults_and_a_partial_update(api, workspace):
    defaults = {"default_schedule": "daily", "bm25_k1": 1.2, "bm25_b": 0.75}
    assert api.get("/api/v1/workspace").json() == defaults
    answer = api.patch("/api/v1/workspace", {"bm25_b": 0.3}, format="json")
    assert answer.status_code == 200
    assert answer.json() == {"default_schedule": "daily", "bm25_k1": 1.2, "bm25_b": 0.3}
    workspace.refresh_from_db()
    assert (workspace.bm25_k1, workspace.bm25_b) == (1.2, 0.3)


@pytest.mark.parametrize("body", [{"bm25_k1": 3.5}, {"bm25_k1": -0.1}, {"bm25_b": 1.2}, {"bm25_b": "x"}])
def test_out_of_range_values_are_refused(api, workspace, body):
    assert api.patch("/api/v1/workspace", body, format="json").status_code == 400
    workspace.refresh_from_db()
    assert (workspace.bm25_k1, workspace.bm25_b) == (1.2, 0.75)


def test_only_managers_change_them_and_only_their_own(workspace, other_workspace, member, outsider_api):
    client = APIClient()
    client.force_login(member)
    assert client.patch("/api/v1/workspace", {"bm25_b": 0.1}, format="json").status_code == 403
    assert outsider_api.patch("/api/v1/workspace", {"bm25_b": 0.1}, format="json").status_code == 200
    workspace.refresh_from_db()
    other_workspace.refresh_from_db()
    assert (workspace.bm25_b, other_workspace.bm25_b) == (0.75, 0.1)


def test_the_database_refuses_values_out_of_range(workspace):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Workspace.objects.filter(id=workspace.id).update(bm25_b=1.5)


def test_searches_use_the_workspace_length_normalisation(workspace, two_lengths):
    default = keyword_scores(workspace.id)
    assert default["Short"] > default["Manual"]  # b = 0.75: the long manual is penalised

    Workspace.objects.filter(id=workspace.id).update(bm25_b=0.0)
    flat = keyword_scores(workspace.id)
    assert flat["Short"] == pytest.approx(flat["Manual"])  # b = 0: length no longer counts
    # An explicit value in the search wins over the workspace's.
    assert keyword_scores(workspace.id, bm25_b=0.75) == pytest.approx(default)


def test_a_changed_setting_is_not_answered_from_the_search_cache(api, workspace, two_lengths):
    def ask():
        answer = api.get("/api/v1/search", {"q": "kettle", "mode": "keyword", "top_k": 5})
        scores = {r["source"]["title"]: r["score"] for r in answer.json()["results"]}
        return scores, answer.headers["X-Search-Cache"]

    before, _ = ask()
    assert ask() == (before, "hit")
    assert before["Short"] > before["Manual"]
    assert api.patch("/api/v1/workspace", {"bm25_b": 0.0}, format="json").status_code == 200
    after, cache = ask()
    assert cache == "miss"
    assert after["Short"] == pytest.approx(after["Manual"])
