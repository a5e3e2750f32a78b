"""Claims: how a job makes a source or a document its own, by a conditional UPDATE, so a message delivered
twice (a redelivery, two workers) does the work once.

A source is claimed while it is pending (`claim_pending_source`). Documents being indexed are held by
`due_by`: the deadline of the job that holds them, and that job's token. A hold lasts as long as the task
holding it may run (its hard time limit, when the pool kills it) plus a margin, so once it has passed the
holder is dead: the hold is free again for any index job, and the sweeper puts the documents back in line
(ingestion/jobs/sweeper.py). Index tasks hold for 120 + 30 s, inside the broker's 300 s visibility timeout,
so a dead worker's redelivered job finds its documents free. A holder that outlived its hold anyway (a pool
process orphaned by a killed main process, an inline call) writes nothing: it stores a document only while
the row still carries its token (`still_held`). A newer version of a pushed document releases the hold
(ingestion/push/ clears `due_by` as it writes the new text): the holder, embedding the older text, stores
nothing, and the newer version's own job claims the document at once. See docs/RELIABILITY.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from celery import current_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Length
from django.utils import timezone

from sources.models import Document, Source, Status

# Past a task's hard time limit the pool has killed it; the margin covers the kill landing.
HOLD_MARGIN_S = 30


def claim_pending_source(*, source: Source, to: str, opens_sync: bool = False) -> bool:
    """Move a pending source to `to` (indexing or crawling): of two jobs delivered for it, one gets True and
    the other does nothing. The last run's error is cleared; `updated_at` is written because queryset
    updates leave auto_now alone and the sweeper judges stalled sources by it. A crawl or a connector's
    sync (`opens_sync`) also clears the notice and opens a sync (ingestion.freshness), whose start is stamped
    on the row and on `source`."""
    now = timezone.now()
    fields: dict = {"status": to, "error": "", "error_detail": "", "updated_at": now}
    if opens_sync:
        fields.update(notice="", sync_started_at=now)
    if Source.objects.filter(id=source.id, status=Status.PENDING).update(**fields) != 1:
        return False
    if opens_sync:
        source.sync_started_at = now
    return True


def hold_seconds() -> int:
    """How long the running task may hold documents: its hard time limit (an upload's parse has a longer
    one than an index job), or the default one outside a task, plus the margin."""
    limit = getattr(current_task, "time_limit", None) if current_task else None
    return int(limit or settings.CELERY_TASK_TIME_LIMIT) + HOLD_MARGIN_S


def _new_hold() -> datetime:
    return timezone.now() + timedelta(seconds=hold_seconds())


def free() -> Q:
    """Documents no live job holds: never held, or held by a job whose hold has passed."""
    return Q(due_by__isnull=True) | Q(status=Status.INDEXING, due_by__lt=timezone.now())


def held_by_a_live_job() -> Q:
    """Documents an index job holds and may still store (its hold has not passed)."""
    return Q(status=Status.INDEXING, due_by__gte=timezone.now())


def hold_documents(document_ids: list[int]) -> tuple[list[int], datetime]:
    """Hold documents this job was handed (a source's own index job, an upload's): they go to indexing
    with a deadline, so no index job takes them as companions meanwhile. A document another index job
    holds is left to it: a newer pushed version's own job, which would otherwise lose it to a job that
    read the older text. Returns the ids held, in id order, and the hold's token."""
    held_until = _new_hold()
    with transaction.atomic():
        ids = list(
            Document.objects.select_for_update()
            .filter(id__in=document_ids)
            .exclude(held_by_a_live_job())
            .order_by("id")
            .values_list("id", flat=True)
        )
        Document.objects.filter(id__in=ids).update(status=Status.INDEXING, due_by=held_until)
    return ids, held_until


def claim_ready(
    document_id: int, *, max_chars: int, max_documents: int, companions_of: int | None = None
) -> tuple[list[Document], datetime, int | None]:
    """A batch for one index job: the document (pending or indexing, free) and companions in the indexing
    state that are free, up to the budget, held together. `skip_locked` lets two index jobs claim side by
    side without waiting. Returns the documents (none if another job holds them), the hold's token, and
    the first free document the budget left out (None when it took every one it saw)."""
    held_until = _new_hold()
    with transaction.atomic():
        own = list(
            Document.objects.select_for_update(skip_locked=True)
            .filter(free(), id=document_id, status__in=[Status.PENDING, Status.INDEXING])
            .annotate(size=Length("text"))
            .values_list("id", "size")
        )
        companions = Document.objects.select_for_update(skip_locked=True)
        companions = companions.filter(free(), status=Status.INDEXING)
        if companions_of is not None:
            companions = companions.filter(source_id=companions_of)
        waiting = list(
            companions.exclude(id=document_id)
            .annotate(size=Length("text"))
            .order_by("id")
            .values_list("id", "size")[: max_documents * 2]
        )
        ids: list[int] = []
        size, more = 0, None
        for candidate, length in [*own, *waiting]:
            if ids and (size + length > max_chars or len(ids) >= max_documents):
                more = candidate
                break
            ids.append(candidate)
            size += length
        if not ids:
            return [], held_until, None
        Document.objects.filter(id__in=ids).update(status=Status.INDEXING, due_by=held_until)
    documents = list(Document.objects.filter(id__in=ids).select_related("source").order_by("id"))
    return documents, held_until, more


def still_held(document_id: int, held_until: datetime) -> bool:
    """Inside the transaction that stores a document: lock its row and say whether it still carries this
    job's token. False when the hold passed and the sweeper or another job took the document since, when a
    newer version released it, or when the document was deleted."""
    return (
        Document.objects.select_for_update()
        .filter(id=document_id, status=Status.INDEXING, due_by=held_until)
        .exists()
    )


def held(document_id: int, held_until: datetime | None) -> Q:
    """The rows a holder may still write: with a token, only while it is still on the row."""
    if held_until is None:
        return Q(id=document_id)
    return Q(id=document_id, status=Status.INDEXING, due_by=held_until)
