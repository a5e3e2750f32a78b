"""Properties of writes racing the index worker (issue #56), on the session's real Celery worker and the
real database, with Hypothesis drawing the timing: the order of the versions pushed and the gaps between
them; what is deleted and how soon after its creation. test_push_races.py and test_delete_races.py keep the
cases the issue reported and the mechanisms, step by step.

- Five PUTs of one pushed id within 0.5 s: within 10 s of the last, the last version is the one stored,
  indexed and found by search, and no other version is.
- A delete racing an index job answers 204, and once the worker is done nothing of the source is left
  (rows, passages, and `audit_store` finds nothing).

Each example gets a workspace, agent and API key of its own."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from agents.models import Agent
from sources.models import Workspace
from sources.services import api_key_create
from sources.tenancy import workspace_scope
from tests.factories import wait_for
from tests.ingestion.push.test_push_races import COLOURS, settled_on, version
from tests.ingestion.test_delete_races import POLICY, left_behind, pushed_batch

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
_numbers = itertools.count()
WORKER = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _fresh() -> tuple[Workspace, Agent, APIClient]:
    number = next(_numbers)
    workspace = Workspace.objects.create(name=f"W{number}", slug=f"race-props-{number}")
    with workspace_scope(workspace.id):
        agent = Agent.objects.create(name="Support bot")
    _key, raw = api_key_create(workspace=workspace, name="props")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return workspace, agent, client


@settings(WORKER, max_examples=4)
@given(
    order=st.permutations(range(len(COLOURS))),
    gaps=st.lists(st.floats(min_value=0.0, max_value=0.12), min_size=4, max_size=4),
)
def test_the_last_of_five_puts_in_half_a_second_is_the_one_searchable(celery_worker, order, gaps):
    workspace, agent, api = _fresh()
    url = f"/api/v1/agents/{agent.id}/documents/depot/door"
    for n, gap in zip(order, [0.0, *gaps], strict=True):
        time.sleep(gap)
        response = api.put(url, version(n), format="json")
        assert response.status_code in (200, 201, 202), response.content
    last = COLOURS[order[-1]]
    wait_for(lambda: settled_on(workspace, "depot/door", last), timeout=10, interval=0.05)
    hits = api.get("/api/v1/search", {"q": "what colour is the door of depot two", "top_k": 5}).json()
    assert {c for hit in hits["results"] for c in COLOURS if c in hit["text"]} == {last}, hits


@settings(WORKER, max_examples=8)
@given(what=st.sampled_from(["text source", "pushed batch"]), after=st.floats(min_value=0.0, max_value=0.15))
def test_a_delete_racing_the_index_job_answers_204_and_leaves_nothing(celery_worker, what, after):
    workspace, agent, api = _fresh()
    if what == "text source":
        body = {"kind": "text", "title": "Policy", "content": POLICY, "agent": agent.id}
        created = api.post("/api/v1/sources", body, format="json")
        assert created.status_code == 201, created.content
        source_id = created.json()["id"]
    else:
        source_id = pushed_batch(api, agent, 0)
    time.sleep(after)
    deleted = api.delete(f"/api/v1/sources/{source_id}")
    assert deleted.status_code == 204, deleted.content
    nothing = {"sources": 0, "documents": 0, "chunks": 0, "audit_store": 0}
    wait_for(lambda: left_behind(workspace) == nothing, timeout=60)
