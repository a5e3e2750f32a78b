"""A delete racing an index job wins (issue #56): no error, the source gone, nothing left behind.

Before, deleting a source while its index job stored passages answered 500 and kept the source, on 3-5 of
20 tries 0.04-0.10 s after its creation: the delete removed the chunks it could see, then waited for the
document the job held; the job committed its chunks, and the delete's commit found them referencing the
document it had removed (an IntegrityError on sources_chunk.document_id). The delete now locks the
source's documents first: it waits for a job storing one, then removes what that job stored, and a job
that comes to store after it finds its document gone and writes nothing."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from ingestion import lifecycle
from ingestion.audit import audit
from ingestion.indexing import documents_index
from ingestion.jobs import claims
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.factories import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
POLICY = " ".join(
    f"Rule {n}: parcels left at depot {n} are kept for {n + 7} days, then returned to the sender."
    for n in range(60)
)


def held_text_source(workspace, agent) -> tuple[Source, Document, object]:
    """A text source whose document an index job holds, as it does between claiming and storing."""
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="Policy", status=Status.INDEXING)
        document = Document.objects.create(source=source, title="Policy", text=POLICY, status=Status.PENDING)
        held, token = claims.hold_documents([document.id])
    assert held == [document.id]
    return source, document, token


def in_thread(target) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # handed to the test, which fails with it
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def storing_job(workspace, source, document, token, chunk_id: str):
    """What indexing._store_document does in its transaction: the row locked while it carries the token,
    the passages inserted; held open until `release` is set, after signalling `storing`."""
    storing, release = threading.Event(), threading.Event()

    def run() -> None:
        with workspace_scope(workspace.id), transaction.atomic():
            assert claims.still_held(document.id, token)
            Chunk.objects.create(
                id=chunk_id,
                workspace_id=workspace.id,
                document_id=document.id,
                source_id=source.id,
                position=0,
                text="Rule 0: parcels left at depot 0 are kept for 7 days.",
            )
            storing.set()
            release.wait(20)

    return run, storing, release


def left_behind(workspace) -> dict[str, int]:
    with workspace_scope(workspace.id):
        rows = {
            "sources": Source.objects.count(),
            "documents": Document.objects.count(),
            "chunks": Chunk.objects.count(),
        }
    findings = audit(workspace_id=workspace.id).summary()["inconsistencies"]
    return {**rows, "audit_store": findings}


def test_a_delete_while_a_job_stores_passages_waits_for_it_then_removes_them(workspace, agent):
    source, document, token = held_text_source(workspace, agent)
    job_storing, storing, release = storing_job(
        workspace, source, document, token, "00000000-0000-0000-0000-0000000000c1"
    )
    job, job_errors = in_thread(job_storing)
    assert storing.wait(20)
    delete, delete_errors = in_thread(lambda: lifecycle.source_delete(source=source))
    time.sleep(1.0)  # the delete is now waiting for the job's document
    release.set()
    job.join(20)
    delete.join(20)
    assert job_errors == [] and delete_errors == []
    assert left_behind(workspace) == {"sources": 0, "documents": 0, "chunks": 0, "audit_store": 0}


def test_a_job_that_comes_to_store_after_the_delete_writes_nothing(workspace, agent):
    source, document, token = held_text_source(workspace, agent)
    with workspace_scope(workspace.id):
        stale = list(Document.objects.filter(id=document.id).select_related("source"))
    lifecycle.source_delete(source=source)
    with workspace_scope(workspace.id):
        documents_index(documents=stale, held_until=token)  # embeds, then finds the document gone
    assert left_behind(workspace) == {"sources": 0, "documents": 0, "chunks": 0, "audit_store": 0}


def test_a_source_job_whose_source_was_deleted_meanwhile_holds_nothing(workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="Policy", status=Status.INDEXING)
        Document.objects.create(source=source, title="Policy", text=POLICY, status=Status.PENDING)
        read_before = list(Document.objects.filter(source=source).select_related("source"))
    lifecycle.source_delete(source=source)
    with workspace_scope(workspace.id):
        documents_index(documents=read_before)
    assert left_behind(workspace) == {"sources": 0, "documents": 0, "chunks": 0, "audit_store": 0}


def test_a_delete_that_meets_a_row_committed_under_it_runs_again(workspace, agent, monkeypatch):
    """A job that inserts rows without holding any the delete locks (a crawl's new pages, an upload's
    parts) can commit one after the delete looked: its foreign key fails the delete's first attempt, which
    is rolled back to its savepoint and run again."""
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="Policy", status=Status.DONE)
        Document.objects.create(source=source, title="Policy", text=POLICY, status=Status.DONE)
    checks = []
    check_constraints = connection.check_constraints

    def a_page_appears_on_the_first_attempt() -> None:
        checks.append(len(checks) + 1)
        if len(checks) == 1:
            Document.objects.create(source_id=source.id, title="fanned out meanwhile")
        check_constraints()

    monkeypatch.setattr(connection, "check_constraints", a_page_appears_on_the_first_attempt)
    lifecycle.source_delete(source=source)
    monkeypatch.undo()
    assert checks == [1, 2]
    assert left_behind(workspace) == {"sources": 0, "documents": 0, "chunks": 0, "audit_store": 0}


def pushed_batch(api, agent, attempt: int) -> int:
    """20 one-paragraph documents in one batch: their index job stores them one by one as it embeds."""
    documents = [
        {"external_id": f"rules/{attempt}/{n}.md", "title": f"Rule {n}", "text": POLICY[:400] + f" ({n})"}
        for n in range(20)
    ]
    response = api.post(f"/api/v1/agents/{agent.id}/documents:batch", {"documents": documents}, format="json")
    assert response.status_code in (200, 202, 207), response.content
    with workspace_scope(agent.workspace_id):
        return Source.objects.get(kind="push").id


def first_stored(source_id: int, workspace) -> bool:
    with workspace_scope(workspace.id):
        return Document.objects.filter(source_id=source_id, status=Status.DONE).exists()


@pytest.mark.worker
def test_deletes_racing_the_index_worker_never_fail_and_leave_nothing(celery_worker, api, workspace, agent):
    """On the session's worker, 10 text sources each deleted 0.04-0.10 s after its creation (as reported),
    and 10 batches of pushed documents each deleted once the job has stored its first document and is
    storing the rest one by one: every delete answers 204, and once the worker is idle nothing of any is
    left (audit_store finds nothing)."""
    answers = []
    for attempt in range(10):
        body = {"kind": "text", "title": f"Policy {attempt}", "content": POLICY, "agent": agent.id}
        created = api.post("/api/v1/sources", body, format="json")
        assert created.status_code == 201, created.content
        time.sleep(0.04 + 0.06 * attempt / 9)
        answers.append(api.delete(f"/api/v1/sources/{created.json()['id']}").status_code)
    for attempt in range(10):
        source_id = pushed_batch(api, agent, attempt)
        wait_for(lambda source_id=source_id: first_stored(source_id, workspace), timeout=60, interval=0.02)
        time.sleep(0.02 * attempt)
        answers.append(api.delete(f"/api/v1/sources/{source_id}").status_code)
    assert answers == [204] * 20
    nothing = {"sources": 0, "documents": 0, "chunks": 0, "audit_store": 0}
    wait_for(lambda: left_behind(workspace) == nothing, timeout=60)


def test_a_sync_removing_a_condemned_page_waits_for_a_job_storing_it_then_removes_what_it_stored(
    workspace, agent
):
    """The same race at a sync's end (freshness.finish): the pages the sync condemned are locked before
    their passages are removed, so a job still storing one is waited for and its passages go too, instead
    of failing the sync's commit on their foreign key."""
    from datetime import timedelta

    from django.utils import timezone

    from ingestion import freshness

    source, document, token = held_text_source(workspace, agent)
    with workspace_scope(workspace.id):
        Document.objects.filter(id=document.id).update(sync_outcome="removed_gone")
        Source.objects.filter(id=source.id).update(sync_started_at=timezone.now() - timedelta(minutes=1))
    job_storing, storing, release = storing_job(
        workspace, source, document, token, "00000000-0000-0000-0000-0000000000c2"
    )

    def sync_finishing() -> None:
        with workspace_scope(workspace.id):
            assert freshness.finish(source_id=source.id)

    job, job_errors = in_thread(job_storing)
    assert storing.wait(20)
    finish, finish_errors = in_thread(sync_finishing)
    time.sleep(1.0)  # the sync's end is now waiting for the job's document
    release.set()
    job.join(20)
    finish.join(20)
    assert job_errors == [] and finish_errors == []
    assert left_behind(workspace) == {"sources": 1, "documents": 0, "chunks": 0, "audit_store": 0}
