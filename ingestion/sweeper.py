"""The sweeper: work whose worker died never reports back, so what has been in flight too long is failed
with a reason, and its source's status derived again."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from ingestion.indexing import source_refresh_status
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope


def sweep_stalled() -> dict[str, int]:
    """Fail what has been in flight for too long, so nothing stays pending or running forever.

    A page whose worker was killed (time limit, crash, deploy) never reports back; its row keeps an old
    `updated_at`. A page that waits on purpose (a site's Retry-After, a busy host) carries its own deadline,
    `due_by`, and is judged by that instead. Operators see the reason; the source's status is then derived
    again.
    """
    now = timezone.now()
    cutoff = now - timezone.timedelta(seconds=settings.CRAWL_STALLED_AFTER)
    overdue = Q(due_by__isnull=True, updated_at__lt=cutoff) | Q(due_by__lt=now)
    stalled = (
        Document.unscoped.filter(status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING])
        .filter(overdue)
        .values_list("id", "workspace_id", "source_id", "status")
    )
    failed = 0
    touched: dict[int, int] = {}
    for document_id, workspace_id, source_id, status in stalled[:5000]:
        message = {
            Status.PENDING: "This page waited too long for a crawler; we stopped waiting.",
            Status.CRAWLING: "The crawl of this page was interrupted.",
            Status.INDEXING: "Indexing this page was interrupted.",
        }[status]
        failed += (
            Document.unscoped.filter(id=document_id, status=status)
            .filter(overdue)
            .update(
                status=Status.FAILED,
                error=message,
                error_detail=f"stalled in {status} since before {cutoff.isoformat()} (or its deadline)",
                failure_class="interrupted",
                due_by=None,
            )
        )
        touched[source_id] = workspace_id
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
    return {"documents_failed": failed, "sources_checked": len(touched)}
