"""Pushing one document several times in a row (issue #56): the last write wins, always, and nothing wedges.

CI pipelines push in bursts. Before, a PUT that landed while an index job held the document kept the job's
hold on the row: the job then stored nothing (the row was no longer indexing) and the new version's job
could claim nothing (the row was held), so the document stayed pending for the hold plus a sweep
(150-180 s), with no version searchable. A newer version now releases the older one's claim: its holder
stores nothing, and the newer version's job takes the document at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from ingestion import tasks
from ingestion.indexing import documents_index, index_ready
from ingestion.jobs import claims
from ingestion.push import documents as push
from sources.models import Chunk, Document, Status
from sources.tenancy import workspace_scope
from tests.factories import wait_for

pytestmark = pytest.mark.django_db
COLOURS = ["amber", "cobalt", "crimson", "emerald", "violet"]


def version(n: int) -> dict[str, str]:
    return {"title": "Depot door", "text": f"The door of depot two is painted {COLOURS[n]}, version {n}."}


def put(workspace, agent, external_id: str, payload: dict) -> push.Outcome:
    [outcome] = push.put_documents(workspace=workspace, agent_id=agent.id, items=[(external_id, payload)])
    return outcome


def indexed_colours(workspace, external_id: str) -> set[str]:
    with workspace_scope(workspace.id):
        texts = Chunk.objects.filter(document__external_id=external_id).values_list("text", flat=True)
        return {colour for text in texts for colour in COLOURS if colour in text}


def document(workspace, external_id: str) -> Document:
    with workspace_scope(workspace.id):
        return Document.objects.get(external_id=external_id)


# --- the claim a newer version releases (in this process) -------------------------------------------------


def test_a_put_while_a_job_holds_the_document_releases_the_hold_and_the_new_version_is_indexed(
    workspace, agent, django_capture_on_commit_callbacks
):
    put(workspace, agent, "door.md", version(0))
    held = document(workspace, "door.md")
    with workspace_scope(workspace.id):
        claimed, token, _ = claims.claim_ready(held.id, max_chars=10**6, max_documents=10)
    assert [d.id for d in claimed] == [held.id]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert put(workspace, agent, "door.md", version(1)).result == "updated"
    assert queued, "the new version is queued for indexing"
    row = document(workspace, "door.md")
    assert row.due_by is None, "the newer version released the older one's claim"
    # The old holder, still running with the first version's text, stores nothing.
    with workspace_scope(workspace.id):
        documents_index(documents=claimed, held_until=token)
    assert indexed_colours(workspace, "door.md") == set()
    # The new version's job takes the document at once (no hold to wait out) and indexes what is stored.
    with workspace_scope(workspace.id):
        Document.objects.filter(id=row.id, status=Status.PENDING).update(status=Status.INDEXING)
    index_ready(workspace_id=workspace.id, document_id=row.id)
    assert document(workspace, "door.md").status == Status.DONE
    assert indexed_colours(workspace, "door.md") == {COLOURS[1]}


def test_a_reindex_of_the_push_source_never_takes_a_document_from_its_newer_versions_job(workspace, agent):
    """The source's own index job holds its documents batch by batch: a document that a newer version's
    job holds meanwhile is left to that job."""
    put(workspace, agent, "door.md", version(0))
    stale = [document(workspace, "door.md")]  # read by a source's index job before its batch is held
    put(workspace, agent, "door.md", version(1))
    with workspace_scope(workspace.id):
        Document.objects.filter(id=stale[0].id).update(status=Status.INDEXING)
        newer, token, _ = claims.claim_ready(stale[0].id, max_chars=10**6, max_documents=10)
        documents_index(documents=stale)  # the source's job: finds the document held, leaves it
        assert Document.objects.get(id=stale[0].id).due_by == token
        documents_index(documents=newer, held_until=token)
    assert indexed_colours(workspace, "door.md") == {COLOURS[1]}


# --- bursts on the real worker ----------------------------------------------------------------------------


def settled_on(workspace, external_id: str, colour: str) -> bool:
    row = document(workspace, external_id)
    return row.status == Status.DONE and indexed_colours(workspace, external_id) == {colour}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_five_puts_of_one_document_in_half_a_second_end_with_the_last_version_searchable(
    celery_worker, api, workspace, agent
):
    """Three bursts in a row, on the session's worker: each ends with its last version alone searchable
    within 10 s of its last PUT, and a document pushed after a burst is not held up by it."""
    url = f"/api/v1/agents/{agent.id}/documents/depot/door"
    waited = []
    for burst in range(3):
        for n in range(5):
            started = time.monotonic()
            response = api.put(url, version(n if burst % 2 == 0 else 4 - n), format="json")
            assert response.status_code in (200, 201, 202), response.content
            time.sleep(max(0.0, 0.1 - (time.monotonic() - started)))
        last = COLOURS[4 if burst % 2 == 0 else 0]
        pushed_at = time.monotonic()
        wait_for(lambda last=last: settled_on(workspace, "depot/door", last), timeout=10, interval=0.05)
        waited.append(round(time.monotonic() - pushed_at, 2))
        hits = api.get("/api/v1/search", {"q": "what colour is the door of depot two", "top_k": 5}).json()
        found = {c for hit in hits["results"] for c in COLOURS if c in hit["text"]}
        assert found == {last}, hits
    after = api.put(f"/api/v1/agents/{agent.id}/documents/after", version(2), format="json")
    assert after.status_code in (200, 201, 202)
    wait_for(lambda: settled_on(workspace, "after", COLOURS[2]), timeout=10, interval=0.05)
    print(f"seconds from the last PUT to only the last version searchable: {waited}")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_five_puts_at_once_end_with_the_stored_version_indexed(celery_worker, workspace, agent):
    """Five PUTs of one id at the same moment, each on its own connection: whichever commits last is the
    stored version, and it is the one indexed, within 10 s."""
    put(workspace, agent, "door.md", version(0))
    gate = threading.Barrier(5)

    def one(n: int) -> None:
        try:
            gate.wait(10)
            put(workspace, agent, "door.md", version(n))
        finally:
            connection.close()

    with ThreadPoolExecutor(5) as pool:
        list(pool.map(one, range(5)))
    stored = document(workspace, "door.md").text
    [last] = [c for c in COLOURS if c in stored]
    wait_for(lambda: settled_on(workspace, "door.md", last), timeout=10, interval=0.05)


def test_the_index_task_leaves_a_released_document_to_the_newer_version(workspace, agent):
    """The older version's job, once its hold is released, neither fails nor finishes the document."""
    put(workspace, agent, "door.md", version(0))
    row = document(workspace, "door.md")
    with workspace_scope(workspace.id):
        claims.claim_ready(row.id, max_chars=10**6, max_documents=10)
    put(workspace, agent, "door.md", version(1))
    tasks.index_document(workspace_id=workspace.id, document_id=row.id)  # the newer version's job
    assert settled_on(workspace, "door.md", COLOURS[1])
