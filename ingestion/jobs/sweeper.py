"""The sweeper: work whose worker died never reports back, so what has been in flight too long is put back
in line while it has attempts left, and failed with a reason once it has none; its source's status is then
derived again. It also keeps every crawl's pump going (ingestion.lifecycle.pump_pages).

The broker gives a dead worker's messages back after its visibility timeout (CELERY_VISIBILITY_TIMEOUT,
minutes); the sweeper is for what the broker lost (a Redis that restarted without its data, a backlog that
was dropped), judged after CRAWL_STALLED_AFTER. See docs/RELIABILITY.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from ingestion import lifecycle
from ingestion.jobs import backlog
from ingestion.kinds.registry import KINDS, get_kind
from ingestion.status import source_refresh_status
from sources.models import ACTIVE_STATUSES, Document, Source, Status
from sources.tenancy import workspace_scope

MESSAGES = {
    Status.PENDING: "This page waited too long for a crawler; we stopped waiting.",
    Status.CRAWLING: "The crawl of this page was interrupted.",
    Status.INDEXING: "Indexing this page was interrupted.",
}


def fetching_kinds() -> list[str]:
    """The kinds whose pages are fetched one job each through the backlog (asked of each kind): web pages,
    and a connector's documents (issue #56: they go in waves too)."""
    return [name for name in KINDS if get_kind(name).page_task]


def resumable_kinds() -> list[str]:
    """Kinds whose one index job both ingests and reindexes (pasted text, uploads, pushed documents): a
    source of theirs whose job died is put back in line whole, and its job indexes what is pending."""
    return [
        name
        for name in KINDS
        if not get_kind(name).fetches_pages and get_kind(name).ingest_task == get_kind(name).reindex_task
    ]


def sweep_stalled() -> dict[str, int]:
    """Put back, or fail, what has been in flight for too long, so nothing stays pending or running forever.

    A page whose worker was killed (time limit, crash, deploy) never reports back; its row keeps an old
    `updated_at`. A page that waits on purpose (a site's Retry-After, a busy host, its place in the crawl
    queue) carries its own deadline, `due_by`, and is judged by that instead; so does a page held by an
    index job, until the hold passes (ingestion/jobs/claims.py). While attempts are left (each crawl of a page
    spends one, and so does each time the sweeper puts it back) a crawled page goes back to its source's
    backlog, a page waiting for its index job (or held by a dead one) is released and gets another job,
    and a file or text source whose job died is queued again; a page still in the backlog waits its turn
    and is not stalled; anything else fails with a reason operators see.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.CRAWL_STALLED_AFTER)
    overdue = Q(due_by__isnull=True, updated_at__lt=cutoff) | Q(due_by__lt=now)
    crawled_kinds, resumable = set(fetching_kinds()), set(resumable_kinds())
    stalled = (
        Document.unscoped.filter(status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING])
        .filter(overdue)
        .values_list("id", "workspace_id", "source_id", "source__kind", "status", "due_by", "attempts")
    )
    sweep = _Sweep(now)
    failed = 0
    for document_id, workspace_id, source_id, kind, status, due_by, attempts in stalled[:5000]:
        row = Document.unscoped.filter(id=document_id, status=status, due_by=due_by).filter(overdue)
        if kind in resumable and sweep.resume_source(source_id, workspace_id):
            continue
        if status == Status.INDEXING and kind not in resumable and attempts < settings.CRAWL_MAX_ATTEMPTS:
            # Its index job was lost, or the worker holding it died (its hold passed:
            # ingestion/jobs/claims.py).
            # The hold is released, so the new job (or any index job of the workspace) can claim it, and
            # it counts as stalled again only CRAWL_STALLED_AFTER from now. A holder that was merely slow
            # finds its token gone and writes nothing.
            if row.update(due_by=None, attempts=F("attempts") + 1, updated_at=now):
                sweep.index.setdefault(workspace_id, []).append(document_id)
            continue
        if kind in crawled_kinds and attempts < settings.CRAWL_MAX_ATTEMPTS:
            if status == Status.PENDING and due_by is None and sweep.in_backlog(source_id, document_id):
                continue  # unpublished: waiting for its wave, not stalled
            put_back = row.update(
                status=Status.PENDING,
                due_by=None,
                attempts=F("attempts") + 1,
                updated_at=now,
                error_detail=f"put back in line by the sweeper (was {status})",
            )
            if put_back:
                sweep.crawl.setdefault(source_id, []).append(document_id)
                sweep.touched[source_id] = workspace_id
            continue
        failed += row.update(
            status=Status.FAILED,
            error=MESSAGES[status],
            error_detail=f"stalled in {status} since before {cutoff.isoformat()} (or its deadline)",
            failure_class="interrupted",
            due_by=None,
        )
        sweep.touched[source_id] = workspace_id
    _sweep_stuck_sources(sweep, resumable, cutoff)
    sweep.publish()
    pumped = _pump_backlogs(crawled_kinds)
    _settle(sweep)
    return {
        "documents_failed": failed,
        "documents_requeued": sum(len(ids) for ids in [*sweep.crawl.values(), *sweep.index.values()]),
        "sources_requeued": sum(sweep.resumed.values()),
        "pages_published": pumped,
        "sources_checked": len(sweep.touched),
    }


def _sweep_stuck_sources(sweep: _Sweep, resumable: set[str], cutoff: datetime) -> None:
    """Sources stuck in an active state with nothing in flight (e.g. a killed expansion or parse) also end,
    or, for a file or text source with attempts left, are queued again."""
    stuck_sources = Source.unscoped.filter(
        status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING], updated_at__lt=cutoff
    ).values_list("id", "workspace_id", "kind")
    for source_id, workspace_id, kind in stuck_sources:
        in_flight = Document.unscoped.filter(
            source_id=source_id, status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING]
        )
        if kind in resumable and not in_flight.exists() and sweep.resume_source(source_id, workspace_id):
            continue
        sweep.touched[source_id] = workspace_id


def _settle(sweep: _Sweep) -> None:
    """Derive every touched source's status again; a crawl that never listed a page failed."""
    for source_id, workspace_id in sweep.touched.items():
        with workspace_scope(workspace_id):
            source_refresh_status(source_id=source_id)
            Source.objects.filter(
                id=source_id, status__in=[Status.PENDING, Status.CRAWLING], pages_total=0
            ).update(status=Status.FAILED, error="This source's crawl was interrupted; try Recrawl.")


class _Sweep:
    """What one sweep puts back in line, published once its rows are written."""

    def __init__(self, now: Any) -> None:
        self.now = now
        self.touched: dict[int, int] = {}
        self.crawl: dict[int, list[int]] = {}  # source -> pages back to its backlog
        self.index: dict[int, list[int]] = {}  # workspace -> pages needing an index job
        self.resumed: dict[int, bool] = {}  # source -> queued again (False: out of attempts)
        self._backlogs: dict[int, set[int]] = {}

    def in_backlog(self, source_id: int, document_id: int) -> bool:
        if source_id not in self._backlogs:
            self._backlogs[source_id] = backlog.members(source_id)
        return document_id in self._backlogs[source_id]

    def resume_source(self, source_id: int, workspace_id: int) -> bool:
        """Queue a file or text source's index job again (its unfinished documents become pending), at
        most CRAWL_MAX_ATTEMPTS times in its life; False when it has no attempt left."""
        if source_id in self.resumed:
            return self.resumed[source_id]
        with workspace_scope(workspace_id):
            source = Source.objects.filter(id=source_id).first()
            sweeps = int(source.state.get("sweeps", 0)) if source else settings.CRAWL_MAX_ATTEMPTS
            resumed = False
            if source is not None and sweeps < settings.CRAWL_MAX_ATTEMPTS:
                resumed = bool(
                    Source.objects.filter(
                        id=source_id, status=source.status, status__in=ACTIVE_STATUSES
                    ).update(
                        status=Status.PENDING,
                        state={**source.state, "sweeps": sweeps + 1},
                        updated_at=self.now,
                    )
                )
            if resumed and source is not None:  # resumed: the source was there
                Document.objects.filter(
                    source_id=source_id, status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING]
                ).update(status=Status.PENDING, due_by=None, updated_at=self.now)
                lifecycle.source_resume(source=source)
        self.resumed[source_id] = resumed
        return resumed

    def publish(self) -> None:
        for source_id, document_ids in self.crawl.items():
            backlog.push(source_id, document_ids)
        for workspace_id, document_ids in self.index.items():
            lifecycle.queue_index_jobs(workspace_id=workspace_id, document_ids=document_ids)


def _pump_backlogs(crawled_kinds: set[str]) -> int:
    """Publish the next wave of every source with unpublished pages: a pump whose page job died (or whose
    message was lost) must not leave the rest of the crawl waiting."""
    sources = (
        Document.unscoped.filter(source__kind__in=crawled_kinds, status=Status.PENDING, due_by__isnull=True)
        .values_list("source_id", "workspace_id")
        .order_by()
        .distinct()
    )
    return sum(
        lifecycle.pump_pages(workspace_id=workspace_id, source_id=source_id)
        for source_id, workspace_id in sources[:1000]
    )
