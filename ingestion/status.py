"""A source's status and counters, derived from its documents (the single source of truth) after every
crawled page, index job, retry and cancel; the kind has the last word on what its documents mean
(SourceKind.settle), and a sync that has nothing left in flight ends here (ingestion.freshness.finish)."""

from __future__ import annotations

from django.db.models import Count, Q
from django.utils import timezone

from ingestion import freshness
from ingestion.failures import SKIP_LABELS, nothing_indexed
from ingestion.kinds.registry import get_kind
from retrieval import cache as semantic_cache
from sources.models import ACTIVE_STATUSES, Chunk, Document, Source, Status


def source_refresh_status(*, source_id: int) -> None:
    """Derive a source's counters and status from its documents (the single source of truth). When nothing
    is in flight any more, its open sync ends first (ingestion.freshness.finish), removing condemned pages.

    Every crawled page and index job calls this, so it reads the documents in one aggregate and the source
    in one row: four statements where it took eight (docs/BENCHMARKS.md)."""
    counts = _document_counts(source_id)
    if counts["active"] == 0 and freshness.finish(source_id=source_id):
        counts = _document_counts(source_id)  # the sync's end removed the pages the evidence condemned
    fields = ("kind", "error", "status", "workspace_id", "agent_id")
    row = Source.objects.filter(id=source_id).values(*fields).first()
    if row is None:
        return
    kind = get_kind(row["kind"])
    update = {
        "pages_total": counts["total"],
        "pages_done": counts["done"],
        "pages_failed": counts["failed"],
        "pages_skipped": counts["skipped"],
        "pages_skipped_by_reason": {r: counts[f"skipped_{r}"] for r in SKIP_LABELS if counts[f"skipped_{r}"]},
        "chunks_count": Chunk.objects.filter(source_id=source_id).count(),
    }
    if counts["active"] == 0:
        # Skipped pages were left out on purpose: a source whose pages were all skipped has nothing that
        # failed (it is done, and says how many it skipped); only failures make it failed.
        if counts["done"] == 0 and (counts["failed"] or not counts["skipped"]):
            failed = list(
                Document.objects.filter(source_id=source_id, status=Status.FAILED)
                .order_by("id")
                .values_list("failure_class", "error", "error_detail")[:1000]
            )
            # A listing that failed already said why (row["error"]); pages that failed say it now.
            listing_error = row["error"] if row["status"] == Status.FAILED else ""
            error, detail = nothing_indexed(failed, listing_error, kind.unit[0], skipped=counts["skipped"])
            update.update(status=Status.FAILED, error=error[:500])
            if failed or not listing_error:
                update["error_detail"] = detail
        else:
            update.update(status=Status.DONE, indexed_at=timezone.now(), error="", error_detail="")
    else:
        fetching = counts["crawling"] > 0 and kind.fetches_pages
        update["status"] = Status.CRAWLING if fetching else Status.INDEXING
    update = kind.settle(source_id=source_id, update=update)
    Source.objects.filter(id=source_id).update(**update)
    semantic_cache.invalidate(workspace_id=row["workspace_id"], agent_id=row["agent_id"])


def _document_counts(source_id: int) -> dict[str, int]:
    """How many of the source's documents there are, done, failed, skipped (in all and by reason), in
    flight and not fetched yet."""
    skipped = Q(status=Status.SKIPPED)
    return Document.objects.filter(source_id=source_id).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=Status.DONE)),
        failed=Count("id", filter=Q(status=Status.FAILED)),
        skipped=Count("id", filter=skipped),
        **{f"skipped_{r}": Count("id", filter=skipped & Q(skip_reason=r)) for r in SKIP_LABELS},
        active=Count("id", filter=Q(status__in=ACTIVE_STATUSES)),
        crawling=Count("id", filter=Q(status__in=[Status.PENDING, Status.CRAWLING])),
    )
