"""The sweeper: work whose worker died never reports back, so what has been in flight too long is put back
in line while it has attempts left, and failed with a reason once it has none; its source's status is then
derived again. It also keeps every crawl's pump going (ingestion.lifecycle.pump_pages).

The broker gives a dead worker's messages back after its visibility timeout (CELERY_VISIBILITY_TIMEOUT,
minutes); the sweeper is for what the broker lost (a Redis that restarted without its data, a backlog that
was dropped), judged after CRAWL_STALLED_AFTER. See docs/RELIABILITY.md.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from ingestion import backlog, lifecycle
from ingestion.indexing import source_refresh_status
from ingestion.kinds.registry import KINDS, get_kind
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

MESSAGES = {
    Status.PENDING: "This page waited too long for a crawler; we stopped waiting.",
    Status.CRAWLING: "The crawl of this page was interrupted.",
    Status.INDEXING: "Indexing this page was interrupted.",
}


def fetching_kinds() -> list[str]:
    """The kinds whose pages are crawled one job each through the backlog (asked of each kind)."""
    return [name for name in KINDS if get_kind(name).fetches_pages]


def sweep_stalled() -> dict[str, int]:
    """Put back, or fail, what has been in flight for too long, so nothing stays pending or running forever.

    A page whose worker was killed (time limit, crash, deploy) never reports back; its row keeps an old
    `updated_at`. A page that waits on purpose (a site's Retry-After, a busy host, its place in the crawl
    queue) carries its own deadline, `due_by`, and is judged by that instead. A crawled page with attempts
    left (each crawl of it spends one, and so does each time the sweeper puts it back) goes back to its
    source's backlog; a page still in the backlog waits its turn and is not stalled; anything else fails
    with a reason operators see.
    """
    now = timezone.now()
    cutoff = now - timezone.timedelta(seconds=settings.CRAWL_STALLED_AFTER)
    overdue = Q(due_by__isnull=True, updated_at__lt=cutoff) | Q(due_by__lt=now)
    crawled_kinds = set(fetching_kinds())
    stalled = (
        Document.unscoped.filter(status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING])
        .filter(overdue)
        .values_list("id", "workspace_id", "source_id", "source__kind", "status", "due_by", "attempts")
    )
    failed = 0
    touched: dict[int, int] = {}
    waiting: dict[int, set[int]] = {}
    requeued: dict[int, list[int]] = {}
    for document_id, workspace_id, source_id, kind, status, due_by, attempts in stalled[:5000]:
        row = Document.unscoped.filter(id=document_id, status=status, due_by=due_by).filter(overdue)
        if kind in crawled_kinds and status != Status.INDEXING:
            if status == Status.PENDING and due_by is None:
                if source_id not in waiting:
                    waiting[source_id] = backlog.members(source_id)
                if document_id in waiting[source_id]:
                    continue  # unpublished: waiting for its wave, not stalled
            if attempts < settings.CRAWL_MAX_ATTEMPTS:
                if row.update(
                    status=Status.PENDING,
                    due_by=None,
                    attempts=F("attempts") + 1,
                    updated_at=now,
                    error_detail=f"put back in line by the sweeper (was {status})",
                ):
                    requeued.setdefault(source_id, []).append(document_id)
                    touched[source_id] = workspace_id
                continue
        failed += row.update(
            status=Status.FAILED,
            error=MESSAGES[status],
            error_detail=f"stalled in {status} since before {cutoff.isoformat()} (or its deadline)",
            failure_class="interrupted",
            due_by=None,
        )
        touched[source_id] = workspace_id
    for source_id, document_ids in requeued.items():
        backlog.push(source_id, document_ids)
    pumped = _pump_backlogs(crawled_kinds)
    # Sources stuck in an active state with nothing in flight (e.g. a killed expansion) also end.
    stuck_sources = Source.unscoped.filter(
        status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING], updated_at__lt=cutoff
    ).values_list("id", "workspace_id")
    for source_id, workspace_id in stuck_sources:
        touched[source_id] = workspace_id
    for source_id, workspace_id in touched.items():
        with workspace_scope(workspace_id):
            source_refresh_status(source_id=source_id)
            Source.objects.filter(
                id=source_id, status__in=[Status.PENDING, Status.CRAWLING], pages_total=0
            ).update(status=Status.FAILED, error="This source's crawl was interrupted; try Recrawl.")
    return {
        "documents_failed": failed,
        "documents_requeued": sum(len(ids) for ids in requeued.values()),
        "pages_published": pumped,
        "sources_checked": len(touched),
    }


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
