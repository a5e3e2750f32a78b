"""An index job's hold on its batch (ingestion/jobs/claims.py): a worker killed while holding it leaves the
documents held only until the hold passes; then the sweeper puts them back in line (or the dead job's
redelivered message takes them back), they are indexed exactly once, and a holder that was merely slow
writes nothing. Worker tests run a real process that claims a batch and is killed -9, and the session's
real Celery worker that indexes what the sweeper put back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from ingestion import tasks
from ingestion.indexing import documents_index
from ingestion.jobs import claims
from ingestion.jobs.sweeper import sweep_stalled
from ingestion.text.chunking import chunk_text
from retrieval.embedders.base import EmbeddingError
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope
from tests.factories import ROOT, OneStreamMiniLM, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = {"max_chars": 1_000_000, "max_documents": 100}


def _crawled_pages(workspace, agent, count: int) -> list[Document]:
    """Pages as the crawler leaves them: text extracted, status indexing, their index jobs queued."""
    with workspace_scope(workspace.id):
        source = Source.objects.create(
            agent=agent, kind="sitemap", title="Site", config={"url": "https://a.test/"}, status="indexing"
        )
        return [
            Document.objects.create(
                source=source,
                url=f"https://a.test/page-{i}",
                title=f"Page {i}",
                text=f"Page {i} explains how refunds work for order type {i}. " * (40 * (i + 1)),
                status=Status.INDEXING,
                attempts=1,  # its crawl
            )
            for i in range(count)
        ]


def _expected_chunks(page: Document) -> int:
    return len(
        chunk_text(
            page.text, target_chars=settings.CHUNK_TARGET_CHARS, overlap_chars=settings.CHUNK_OVERLAP_CHARS
        )
    )


def _pass_the_hold(pages: list[Document]) -> None:
    """The hold's time passes (120 + 30 s in production) without waiting for it."""
    Document.unscoped.filter(id__in=[p.id for p in pages]).update(
        due_by=timezone.now() - timezone.timedelta(seconds=1)
    )


def _claim_in_a_process_then_kill_it(workspace_id: int, document_id: int) -> None:
    """A worker process claims the batch as index_ready does, and dies with it (kill -9) before indexing."""
    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "GROUNDED_TEST_RUN": settings.TEST_RUN_ID,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    script = (
        "import sys, time, django; django.setup()\n"
        "from ingestion.jobs import claims\n"
        "from sources.tenancy import workspace_scope\n"
        f"with workspace_scope({workspace_id}):\n"
        f"    documents, _, _ = claims.claim_ready({document_id}, max_chars=1_000_000, max_documents=100)\n"
        "print('held', len(documents), flush=True)\n"
        "time.sleep(600)\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout.readline().startswith("held")
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()


def test_a_batch_held_by_a_killed_worker_is_put_back_by_the_sweeper_and_indexed_once(
    celery_worker, workspace, agent
):
    pages = _crawled_pages(workspace, agent, 4)
    _claim_in_a_process_then_kill_it(workspace.id, pages[0].id)
    held = Document.unscoped.filter(id__in=[p.id for p in pages], due_by__isnull=False)
    assert held.count() == 4  # the dead process still holds them all

    # While the hold lasts, its holder may be alive: the sweeper leaves it alone.
    assert sweep_stalled()["documents_requeued"] == 0
    assert held.count() == 4

    _pass_the_hold(pages)
    assert sweep_stalled()["documents_requeued"] == 4
    # The pages' statuses, then their source's, derived from them once the job's last page is stored.
    wait_for(
        lambda: (
            set(Document.unscoped.filter(source_id=pages[0].source_id).values_list("status", flat=True))
            == {Status.DONE}
            and Source.unscoped.get(id=pages[0].source_id).status == Status.DONE
        ),
        timeout=90,
    )
    with workspace_scope(workspace.id):
        per_page = dict(
            Chunk.objects.values("document_id").annotate(n=Count("id")).values_list("document_id", "n")
        )
        assert per_page == {p.id: _expected_chunks(p) for p in pages}  # each page indexed exactly once
        assert Source.objects.get(id=pages[0].source_id).status == Status.DONE
        # Put back once: one attempt spent each, and nothing is left for a later sweep.
        assert set(Document.objects.values_list("attempts", flat=True)) == {2}
        assert not Document.objects.filter(due_by__isnull=False).exists()
    assert sweep_stalled()["documents_requeued"] == 0


class DownEmbedder(OneStreamMiniLM):
    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        raise EmbeddingError("The embedding service is unavailable.", "connection refused")


def test_a_redelivered_job_takes_a_passed_hold_and_the_slow_holder_writes_nothing(workspace, agent, settings):
    pages = _crawled_pages(workspace, agent, 3)
    with workspace_scope(workspace.id):
        stale, stale_token, _ = claims.claim_ready(pages[0].id, **BUDGET)
    assert [d.id for d in stale] == [p.id for p in pages]
    # A job delivered again while the hold lasts finds nothing to claim.
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)
    assert not Chunk.unscoped.filter(source_id=pages[0].source_id).exists()

    _pass_the_hold(pages)
    tasks.index_document(workspace_id=workspace.id, document_id=pages[0].id)  # the message redelivered
    done = Document.unscoped.filter(source_id=pages[0].source_id, status=Status.DONE)
    assert done.count() == 3
    chunks = sorted(Chunk.unscoped.filter(source_id=pages[0].source_id).values_list("id", "text"))

    # The first holder was only slow: it comes back with its stale copy of the pages, then with an embedder
    # that fails. Neither overwrites the new holder's chunks nor fails a page that is done.
    stale[0].text = "A stale copy of this page."
    documents_index(documents=stale, held_until=stale_token)
    settings.EMBEDDERS = {
        "default": {
            **settings.EMBEDDERS["default"],
            "BACKEND": "tests.ingestion.jobs.test_index_claims.DownEmbedder",
        }
    }
    documents_index(documents=stale, held_until=stale_token)
    assert done.count() == 3
    assert sorted(Chunk.unscoped.filter(source_id=pages[0].source_id).values_list("id", "text")) == chunks


def test_an_index_jobs_hold_ends_before_the_broker_gives_its_message_back():
    # Past a task's hard time limit its process is dead; the hold ends soon after, and before the
    # visibility timeout, so the dead job's redelivered message finds its documents free.
    assert claims.hold_seconds() == settings.CELERY_TASK_TIME_LIMIT + claims.HOLD_MARGIN_S
    assert claims.hold_seconds() < settings.CELERY_VISIBILITY_TIMEOUT
