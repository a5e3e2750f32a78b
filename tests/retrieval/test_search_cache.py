"""The search API's cache: a repeated question is answered without searching or querying, until
anything its answer shows changes; never across workspaces; never with a reranker's failure."""

from __future__ import annotations

import pytest
from django.utils import timezone

from retrieval import cache as search_cache
from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.fakes.openai_server import FakeProvider, openai_compatible_server
from tests.fakes.rerank_server import rerank_server

pytestmark = pytest.mark.django_db

QUESTION = {"q": "how long is the kettle warranty", "top_k": 3}


@pytest.fixture
def provider(settings):
    """An embeddings provider on 127.0.0.1 that counts the queries it embeds."""
    with openai_compatible_server(FakeProvider()) as running:
        settings.EMBEDDERS = {
            "default": {
                "BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
                "OPTIONS": {"base_url": running.base_url, "model": "embed-v1", "api_key": running.api_key},
            }
        }
        yield running


def embeddings_asked(provider) -> int:
    return sum(r["path"] == "/v1/embeddings" for r in provider.requests)


@pytest.fixture
def kettle(workspace, agent, provider):
    return index_text(workspace, agent, "Warranty", "Every kettle carries a two-year warranty.")


def search(client, **question):
    response = client.get("/api/v1/search", {**QUESTION, **question})
    assert response.status_code == 200, response.content
    return response["X-Search-Cache"], response.json()


def titles(body) -> list[str]:
    return [r["source"]["title"] for r in body["results"]]


def test_a_repeated_question_is_answered_from_the_cache_without_embedding_it(api, kettle, provider):
    status, first = search(api)
    assert status == "miss" and titles(first) == ["Warranty"]
    embedded = embeddings_asked(provider)
    status, again = search(api)
    assert status == "hit"
    assert again == first
    assert embeddings_asked(provider) == embedded


@pytest.mark.parametrize(
    "change",
    [
        {"q": "How long is the kettle warranty"},
        {"top_k": 2},
        {"mode": "keyword"},
        {"min_score": 0.1},
        {"filters": '{"lang": "en"}'},
    ],
)
def test_every_search_setting_is_part_of_the_question(api, kettle, change):
    assert search(api)[0] == "miss"
    assert search(api, **change)[0] == "miss"
    assert search(api, **change)[0] == "hit"


def test_indexing_a_source_clears_the_workspaces_answers(api, workspace, agent, kettle):
    assert search(api)[0] == "miss"
    assert search(api)[0] == "hit"
    index_text(workspace, agent, "Kettle FAQ", "The kettle warranty is two years long.")
    status, body = search(api)
    assert status == "miss"
    assert set(titles(body)) == {"Warranty", "Kettle FAQ"}


def test_deleting_a_source_clears_the_workspaces_answers(api, workspace, agent, kettle):
    from ingestion.lifecycle import source_delete

    faq = index_text(workspace, agent, "Kettle FAQ", "The kettle warranty is two years long.")
    assert set(titles(search(api)[1])) == {"Warranty", "Kettle FAQ"}
    source_delete(source=faq)
    status, body = search(api)
    assert status == "miss" and titles(body) == ["Warranty"]


def test_another_workspace_asking_the_same_question_never_gets_a_hit(
    api, outsider_api, workspace, other_workspace, other_agent, kettle
):
    index_text(other_workspace, other_agent, "Their warranty", "Globex kettles carry a one-year warranty.")
    status, ours = search(api)
    assert status == "miss" and titles(ours) == ["Warranty"]
    status, theirs = search(outsider_api)
    assert status == "miss" and titles(theirs) == ["Their warranty"]
    assert search(outsider_api)[0] == "hit" and search(api)[0] == "hit"


def test_an_entry_recording_another_workspace_is_never_served(workspace, other_workspace):
    """Fail-closed beyond the key: an entry found under a workspace's key but recording another
    workspace (a bug, a forged write) is a miss."""
    key = search_cache.search_key({"query": "kettle"})
    generation, cached, _ = search_cache.search_lookup(workspace_id=other_workspace.id, key=key)
    assert cached is None and generation
    passages = [{"chunk_id": "00000000-0000-0000-0000-000000000001", "text": "Their secret"}]
    search_cache.search_store(
        workspace_id=workspace.id, key=key, generation=generation, passages=passages, stale_chunks=0
    )
    from django.core.cache import cache

    forged = cache.get(search_cache._search_entry_key(workspace.id, key))
    cache.set(search_cache._search_entry_key(other_workspace.id, key), forged)
    assert search_cache.search_lookup(workspace_id=other_workspace.id, key=key).cached is None
    # The genuine entry is served to its own workspace once the generation is its own.
    search_cache.search_store(
        workspace_id=other_workspace.id, key=key, generation=generation, passages=passages, stale_chunks=0
    )
    assert search_cache.search_lookup(workspace_id=other_workspace.id, key=key).cached is not None


def test_an_answer_searched_while_the_sources_changed_is_not_served(workspace):
    key = search_cache.search_key({"query": "kettle"})
    generation, _, _ = search_cache.search_lookup(workspace_id=workspace.id, key=key)
    search_cache.invalidate_searches(workspace_id=workspace.id)  # an ingest committed mid-search
    search_cache.search_store(
        workspace_id=workspace.id, key=key, generation=generation, passages=[], stale_chunks=0
    )
    assert search_cache.search_lookup(workspace_id=workspace.id, key=key).cached is None


def test_a_passage_recording_another_workspace_is_never_served(workspace, other_workspace):
    """The entry's passages each record the workspace they were found in; one from elsewhere spoils it."""
    from django.core.cache import cache

    key = search_cache.search_key({"query": "kettle"})
    generation, _, _ = search_cache.search_lookup(workspace_id=workspace.id, key=key)
    search_cache.search_store(
        workspace_id=workspace.id, key=key, generation=generation, passages=[{"text": "ours"}], stale_chunks=0
    )
    entry = cache.get(search_cache._search_entry_key(workspace.id, key))
    entry["passages"].append({"text": "theirs", "workspace_id": other_workspace.id})
    cache.set(search_cache._search_entry_key(workspace.id, key), entry)
    assert search_cache.search_lookup(workspace_id=workspace.id, key=key).cached is None


def test_a_hit_reads_no_chunk_source_or_document_from_the_database(api, kettle):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sources.models import Chunk, Document, Source

    status, first = search(api)
    assert status == "miss"
    with CaptureQueriesContext(connection) as queries:
        status, again = search(api)
    assert status == "hit" and again == first
    tables = [model._meta.db_table for model in (Chunk, Document, Source)]
    read = [q["sql"] for q in queries.captured_queries if any(f'"{t}"' in q["sql"] for t in tables)]
    assert read == []


def test_a_renamed_source_is_shown_with_its_new_title_at_once(api, kettle):
    assert titles(search(api)[1]) == ["Warranty"]
    assert search(api)[0] == "hit"
    response = api.patch(f"/api/v1/sources/{kettle.id}", {"title": "Kettle warranty"}, format="json")
    assert response.status_code == 200, response.content
    status, body = search(api)
    assert status == "miss" and titles(body) == ["Kettle warranty"]


def test_a_source_renamed_in_the_django_admin_is_shown_with_its_new_title(api, kettle, admin_client):
    from sources.models import Source

    assert search(api)[0] == "miss" and search(api)[0] == "hit"
    source = Source.unscoped.get(id=kettle.id)
    change = admin_client.get(f"/admin/sources/source/{source.id}/change/")
    assert change.status_code == 200
    form = change.context["adminform"].form
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data["title"] = "Renamed by staff"
    response = admin_client.post(f"/admin/sources/source/{source.id}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    status, body = search(api)
    assert status == "miss" and titles(body) == ["Renamed by staff"]


def test_the_reindex_notice_is_counted_once_per_generation(api, workspace, kettle):
    """A miss asks the cache, not the database, how many chunks another model embedded, until a write
    replaces the generation; a chunk that changes model is a write, and the notice follows it."""
    from sources.models import Chunk

    search(api, q="kettle")
    with workspace_scope(workspace.id):
        Chunk.objects.update(embedding_model="an-older-model")
    assert "reindex_needed" not in search(api, q="warranty")[1]  # the generation is the same
    search_cache.invalidate_searches(workspace_id=workspace.id)  # as the store's writes do
    assert search(api, q="warranty years")[1]["reindex_needed"]["chunks"] == 1


def test_a_new_question_reads_the_workspaces_facts_from_the_cache(api, workspace, kettle):
    """Hidden sources and the reindex notice are counted once per generation: a second new question asks
    the database for neither, and hiding a source (a new generation) is seen by the next question."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ingestion.lifecycle import source_update
    from sources.models import Source

    assert search(api, q="kettle warranty")[0] == "miss"
    with CaptureQueriesContext(connection) as queries:
        status, body = search(api, q="how many years of warranty")
    assert status == "miss" and titles(body) == ["Warranty"]
    # Neither the hidden sources nor the chunks of another model (embedding_model < or > the current)
    # were looked for.
    asked = [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in asked if '"hidden_while_paused"' in sql or '"embedding_model" <' in sql]
    with workspace_scope(workspace.id):
        source_update(source=Source.objects.get(id=kettle.id), paused=True, hidden_while_paused=True)
    status, body = search(api, q="is there a warranty on kettles")
    assert status == "miss" and titles(body) == []


def test_an_agents_chat_search_reads_the_hidden_sources_once_per_generation(workspace, agent, kettle):
    """The chat path counts the workspace's facts as the search API does: its second search asks the
    database for no hidden sources, and hiding a source (a new generation) is seen by the next one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ingestion.lifecycle import source_update
    from retrieval.services import SearchParams, search_passages
    from sources.models import Source

    params = SearchParams(top_k=3, min_score=0.0, semantic_cache=False)  # every ask below is searched

    def chat_search(q: str) -> tuple[list[str], list[str]]:
        with CaptureQueriesContext(connection) as queries:
            passages = search_passages(workspace_id=workspace.id, query=q, params=params, agent_id=agent.id)
        return [p.source_title for p in passages], [q["sql"] for q in queries.captured_queries]

    assert chat_search("kettle warranty")[0] == ["Warranty"]
    found, asked = chat_search("how many years of warranty")
    assert found == ["Warranty"] and not [sql for sql in asked if '"hidden_while_paused"' in sql]
    with workspace_scope(workspace.id):
        source_update(source=Source.objects.get(id=kettle.id), paused=True, hidden_while_paused=True)
    assert chat_search("is there a warranty on kettles")[0] == []


def test_a_failing_reranker_is_not_cached(api, kettle, settings):
    with rerank_server(score=None, status=503) as url:
        settings.RERANKERS = {
            "http": {"BACKEND": "retrieval.rerankers.http.HttpReranker", "OPTIONS": {"base_url": url}}
        }
        assert search(api, rerank="http")[0] == "miss"
        assert search(api, rerank="http")[0] == "miss"
    with rerank_server(lambda q, d: 1.0) as url:
        settings.RERANKERS = {
            "http": {"BACKEND": "retrieval.rerankers.http.HttpReranker", "OPTIONS": {"base_url": url}}
        }
        assert search(api, rerank="http")[0] == "miss"
        assert search(api, rerank="http")[0] == "hit"


def test_the_cache_can_be_turned_off(api, kettle, settings):
    settings.SEARCH_CACHE_TTL = 0
    assert search(api)[0] == "miss"
    assert search(api)[0] == "miss"


def test_an_api_keys_last_use_is_written_at_most_once_a_minute(api, workspace, kettle):
    from sources.models import ApiKey

    def last_used():
        with workspace_scope(workspace.id):
            return ApiKey.objects.get().last_used_at

    search(api)
    first = last_used()
    assert first is not None
    search(api)
    assert last_used() == first
    with workspace_scope(workspace.id):
        ApiKey.objects.update(last_used_at=timezone.now() - timezone.timedelta(minutes=2))
    search(api)
    assert last_used() > first
