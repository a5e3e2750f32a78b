"""Freshness: when a source is synced again, which sources are due, and what a sync did.

A sync is one pass over a source's listing (ingestion.expansion.source_expand opens it, stamping
`sync_started_at`); it ends when none of its pages is in flight (`finish`, called by
status.source_refresh_status), which removes the pages the evidence condemned, writes the outcome
(`Source.last_sync`) and the next date. Removal needs evidence: a page that answered 404/410 in two syncs
in a row, or that two complete listings in a row left out. A 5xx, a time-out, a DNS failure or a partial
listing is no evidence and never removes anything.

The beat task (`claim_due`) starts due sources with a conditional UPDATE, so two beat or worker
processes never start the same sync twice.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from retrieval.vectors import delete_chunk_vectors
from sources.models import ACTIVE_STATUSES, Chunk, Document, Schedule, Source, Status, Workspace

log = logging.getLogger(__name__)

INTERVALS: dict[str, timedelta] = {
    Schedule.HOURLY: timedelta(hours=1),
    Schedule.DAILY: timedelta(days=1),
    Schedule.WEEKLY: timedelta(weeks=1),
}
# A known page this sync did not fetch because the plan's crawl pages for today were used up
# (ingestion.admission): it keeps what it had, and the sync's outcome counts it apart from "unchanged".
HELD_BACK = "held_back"
# What a page's sync_outcome says about why it went, as the outcome and the UI word it.
REMOVAL_REASONS = {
    "removed_gone": "the page answered 404 or 410 in two syncs in a row",
    "removed_unlisted": "two complete sitemap listings in a row left the page out",
    # A connected source's (integrations/sync.py): the provider's own answer is the evidence.
    "removed_unpicked": "no longer among what the source picked (deleted, moved out or unshared)",
    "removed_deleted": "the provider said it was deleted, trashed or is no longer shared",
}


def schedule_for_new(*, resyncable: bool, workspace: Workspace, requested: str | None) -> str:
    """A new source's schedule: off for kinds with nothing to sync again, else the creator's choice or
    the workspace's default. Raises ValueError for a schedule that doesn't exist."""
    if not resyncable:
        if requested not in (None, "", Schedule.OFF):
            raise ValueError("This kind of source has nothing to sync again; its schedule is off.")
        return Schedule.OFF
    if requested in (None, ""):
        return workspace.default_schedule
    if requested not in Schedule.values:
        raise ValueError(f"Choose one of: {', '.join(Schedule.values)}.")
    return str(requested)


def next_sync_after(schedule: str, moment: datetime) -> datetime | None:
    interval = INTERVALS.get(schedule)
    return moment + interval if interval else None


def sync_is_open(source: Source) -> bool:
    started, finished = source.sync_started_at, source.last_synced_at
    return started is not None and (finished is None or finished < started)


# --- the beat task's side ------------------------------------------------------------------------------


def due_sources(*, now: datetime, batch: int) -> list[tuple[int, int, datetime, str]]:
    """(source id, workspace id, next_sync_at, schedule) of sources due now, oldest first. Any
    workspace: the beat task serves them all; each claim below is per source."""
    due = (
        Source.unscoped.filter(next_sync_at__lte=now, paused=False)
        .exclude(schedule=Schedule.OFF)
        .exclude(status__in=ACTIVE_STATUSES)
        .order_by("next_sync_at", "id")
        .values_list("id", "workspace_id", "next_sync_at", "schedule")
    )
    return list(due[:batch])


def claim_due(*, now: datetime | None = None, batch: int = 200) -> list[Source]:
    """Claim due sources for a sync, at most SYNC_MAX_PER_WORKSPACE running per workspace. A claim is one
    conditional UPDATE (still due at the date we read, not paused, not active): of two claimers, exactly one
    gets each source. The claimed source becomes pending; its next date moves one interval on, so a sync
    whose message was lost is tried again then. The caller queues the work."""
    now = now or timezone.now()
    due = due_sources(now=now, batch=batch)
    if not due:
        return []
    workspaces = {workspace_id for _, workspace_id, _, _ in due}
    running = Counter(
        Source.unscoped.filter(workspace_id__in=workspaces, status__in=ACTIVE_STATUSES).values_list(
            "workspace_id", flat=True
        )
    )
    claimed: list[Source] = []
    for source_id, workspace_id, next_at, schedule in due:
        if running[workspace_id] >= settings.SYNC_MAX_PER_WORKSPACE:
            continue  # the rest of this workspace waits for the next beat
        won = (
            Source.unscoped.filter(id=source_id, next_sync_at=next_at, paused=False)
            .exclude(status__in=ACTIVE_STATUSES)
            .exclude(schedule=Schedule.OFF)
            .update(status=Status.PENDING, next_sync_at=next_sync_after(schedule, now), updated_at=now)
        )
        if won == 1:
            running[workspace_id] += 1
            claimed.append(Source.unscoped.get(id=source_id))
    return claimed


# --- a sync's end ------------------------------------------------------------------------------------


def finish(*, source_id: int, listing_error: str = "") -> bool:
    """End the open sync of a source whose pages have all settled: remove what the evidence condemned
    (chunks through the store first), write the outcome and the next date. Runs once per sync (a
    conditional UPDATE on the sync's start); False when no sync was open. Call within the workspace scope."""
    source = Source.objects.filter(id=source_id).first()
    if source is None or not sync_is_open(source):
        return False
    now = timezone.now()
    with transaction.atomic():
        won = (
            Source.objects.filter(id=source_id, sync_started_at=source.sync_started_at)
            .filter(Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=source.sync_started_at))
            .update(last_synced_at=now)
        )
        if won != 1:
            return False
        removed = _remove_condemned(source)
        outcome = _outcome(source, removed, listing_error)
        next_at = None if source.paused else next_sync_after(source.schedule, now)
        Source.objects.filter(id=source_id).update(last_sync=outcome, next_sync_at=next_at)
    return True


def _remove_condemned(source: Source) -> dict[str, list[str]]:
    """Delete the pages this sync condemned, with their chunks and vector points; their URLs by reason.
    The pages are locked first, in id order as a source's delete locks them: an index job still storing
    one is waited for, and what it stored is removed with the rest (read after the lock), rather than
    failing this commit on the foreign key of passages that arrived under it."""
    condemned = list(
        Document.objects.select_for_update()
        .filter(source_id=source.id, sync_outcome__in=list(REMOVAL_REASONS))
        .order_by("id")
        .values_list("id", "url", "sync_outcome")
    )
    if not condemned:
        return {}
    ids = [document_id for document_id, _, _ in condemned]
    chunk_ids = [str(i) for i in Chunk.objects.filter(document_id__in=ids).values_list("id", flat=True)]
    delete_chunk_vectors(workspace_id=source.workspace_id, chunk_ids=chunk_ids)
    Chunk.objects.filter(document_id__in=ids).delete()
    Document.objects.filter(id__in=ids).delete()
    removed: dict[str, list[str]] = {}
    for _, url, reason in condemned:
        removed.setdefault(reason, []).append(url)
    log.info("sync of source %s removed %s", source.id, {k: len(v) for k, v in removed.items()})
    return removed


def _outcome(source: Source, removed: dict[str, list[str]], listing_error: str) -> dict[str, Any]:
    counts = Document.objects.filter(source_id=source.id).aggregate(
        added=Count("id", filter=Q(sync_outcome="added", status=Status.DONE)),
        changed=Count("id", filter=Q(sync_outcome="changed", status=Status.DONE)),
        unchanged=Count("id", filter=Q(sync_outcome="unchanged", status=Status.DONE)),
        # A held-back page that failed in an earlier sync was not tried by this one.
        failed=Count("id", filter=Q(status=Status.FAILED) & ~Q(sync_outcome=HELD_BACK)),
        held_back=Count("id", filter=Q(sync_outcome=HELD_BACK)),
        skipped=Count("id", filter=Q(status=Status.SKIPPED)),
    )
    outcome: dict[str, Any] = {
        **counts,
        "removed": sum(len(urls) for urls in removed.values()),
        "removed_pages": [
            {"url": url, "reason": REMOVAL_REASONS[reason]}
            for reason, urls in removed.items()
            for url in urls
        ][:200],
        "started_at": source.sync_started_at.isoformat() if source.sync_started_at else None,
        "finished_at": timezone.now().isoformat(),
    }
    if listing_error:
        outcome["error"] = listing_error
    return outcome


def outcome_summary(last_sync: dict[str, Any]) -> str:
    """One line for people: "2 added, 3 changed, 70 unchanged, 2 removed, 0 failed", then the pages left
    out on purpose when there are any (", 4 skipped"), and when the plan held pages back, ", 5 held back
    (daily crawl quota)"."""
    if not last_sync:
        return ""
    parts = [f"{last_sync.get(k, 0)} {k}" for k in ("added", "changed", "unchanged", "removed", "failed")]
    if last_sync.get("skipped"):
        parts.append(f"{last_sync['skipped']} skipped")
    if last_sync.get("held_back"):
        parts.append(f"{last_sync['held_back']} held back (daily crawl quota)")
    return ", ".join(parts)
