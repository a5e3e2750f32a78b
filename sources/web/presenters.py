"""What the admin UI's pages about sources show, shaped from the models: source rows, their freshness, the
add dialog's kinds, failed and skipped pages, a source's preview. Reads only; writes go through
ingestion.lifecycle (sources/web/forms.py turns a form into those calls). Agents' pages have
agent_presenters.py, the sources list's toolbar and pager source_listing.py."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.timesince import timesince, timeuntil

from ingestion.kinds.registry import addable_kinds, get_kind
from ingestion.lifecycle import EMPTY_SEARCH_PAGE
from sources.models import ACTIVE_STATUSES, Schedule, Source, Status
from sources.tenancy import workspace_scope

STATUS_LABELS: dict[str, str] = {  # by Status, which is a str
    Status.PENDING: "Queued",
    Status.CRAWLING: "Crawling",
    Status.INDEXING: "Indexing",
    Status.DONE: "Done",
    Status.FAILED: "Failed",
    Status.SKIPPED: "Skipped",
}


def add_dialog_kinds() -> list[dict[str, Any]]:
    """The "Add source" dialog's tabs: each kind's label, icon, help and the fields its payload needs."""
    return [
        {
            "name": k.name,
            "label": k.add_label,
            "icon": k.icon,
            "help": k.add_help,
            "fields": " ".join(k.form_fields),
            "files": "file" in k.form_fields,
            "fetches": k.fetches_pages,
            "resyncable": k.resyncable,
        }
        for k in addable_kinds()
    ]


# --- sources as the UI shows them ---------------------------------------------------------------------


def source_row(source: Source) -> dict[str, Any]:
    """Everything a row of the sources table shows, for the template and the live refresh alike."""
    from ingestion.failures import counted_skips

    kind = get_kind(source.kind)
    # Ingestion writes progress with queryset updates, which leave auto_now's updated_at alone; the time
    # indexing finished is the better "last update" then.
    updated_at = max(filter(None, [source.updated_at, source.indexed_at]))
    return {
        "id": source.id,
        "kind": source.kind,
        "kind_label": kind.label,
        "icon": kind.icon,
        "title": source.title,
        "address": kind.address(source),
        "status": source.status,
        "status_label": STATUS_LABELS.get(source.status, source.status.title()),
        "active": source.status in ACTIVE_STATUSES,
        "error": source.error,
        "error_detail": source.error_detail,
        "notice": source.notice,
        "pages_total": source.pages_total,
        "pages_done": source.pages_done,
        "pages_failed": source.pages_failed,
        "pages_skipped": source.pages_skipped,
        # "30 too little text, 2 only lists of links", as failures are counted by class.
        "skipped_summary": counted_skips(source.pages_skipped_by_reason or {}),
        "pages_left": source.pages_left,
        "chunks_count": source.chunks_count,
        # The kind's "keep short pages" option (web pages): whether it has one, and whether it is on.
        "keeps_short_option": "keep_short_pages" in kind.config_model.model_fields,
        "keep_short_pages": bool(source.config.get("keep_short_pages")),
        "updated_at": updated_at,
        "updated_ago": _ago(updated_at),
        "recrawlable": kind.resyncable,
        **resync_wording(kind),
        "reupload_needed": bool(source.state.get("reupload_needed")),
        "new_file_needed": bool(source.state.get("new_file_needed")),
        "reindexable": reindex_helps(source),
        "stage": stage_label(source, kind.unit),
        # The kind's own word: "3 sections done" for a file, "1 text" for pasted text, "12 items" for a feed.
        "unit_one": kind.unit[0],
        "unit_many": kind.unit[1],
        **freshness(source, resyncable=kind.resyncable),
        # Changes whenever anything the row shows changes, so the live refresh only redraws those rows.
        "version": _digest(
            (
                source.status,
                source.pages_total,
                source.pages_done,
                source.pages_failed,
                source.pages_skipped,
                source.chunks_count,
                updated_at.isoformat(),
                source.error,
                source.notice,
                source.title,
                source.state.get("reupload_needed"),
                source.state.get("new_file_needed"),
                source.state.get("progress"),
                source.schedule,
                source.paused,
                source.hidden_while_paused,
                source.last_synced_at,
                source.next_sync_at,
            )
        ),
    }


def reindex_helps(source: Source) -> bool:
    """Whether Reindex (chunk and embed again from the kept text) can do anything for this source: not for a
    file whose text is gone or that could not be read (only a new upload helps), nor for fetched pages when
    no page was ever fetched (there is no text to reindex; the row says why they failed)."""
    if source.state.get("reupload_needed") or source.state.get("new_file_needed"):
        return False
    if get_kind(source.kind).fetches_pages:
        return source.pages_done > 0 or source.chunks_count > 0
    return True


def resync_wording(kind: Any) -> dict[str, str]:
    """The row's button that fetches a source again: "Recrawl" for web pages, "Sync now" for a connector."""
    if kind.fetches_pages:
        return {
            "resync_label": "Recrawl",
            "resync_help": "Fetch the pages again now: new and changed pages are indexed, unchanged ones are "
            "kept, removed ones are dropped. Scheduled syncs do the same on their own.",
        }
    return {
        "resync_label": "Sync now",
        "resync_help": f"Fetch it again from {kind.label} now: changed documents are indexed, unchanged ones "
        "are kept, removed ones are dropped. Scheduled syncs do the same on their own.",
    }


STAGES = {
    # stage -> what the row says with counts, and without (the total not known yet).
    "parsing": ("Reading page {done} of {total}", "Reading the file\u2026"),
    "tables": ("Reading tables, page {done} of {total}", "Reading tables\u2026"),
    "ocr": ("Recognising text (OCR), page {done} of {total}", "Recognising text (OCR)\u2026"),
    "embedding": ("Embedding {unit} {done} of {total}", "Embedding\u2026"),
}


def stage_label(source: Source, unit: tuple[str, str]) -> str:
    """Where a long job has got to ("Reading page 3 of 15"), written into Source.state["progress"] by the
    parser and the indexer while the source is in flight; nothing once it has finished."""
    progress = source.state.get("progress")
    if source.status not in ACTIVE_STATUSES or not isinstance(progress, dict):
        return ""
    counted, uncounted = STAGES.get(str(progress.get("stage")), ("", ""))
    done, total = int(progress.get("done") or 0), int(progress.get("total") or 0)
    if not total:
        return uncounted
    return counted.format(done=done, total=total, unit=unit[0])


def freshness(source: Source, *, resyncable: bool) -> dict[str, Any]:
    """What a row says about syncing: the schedule, when it last ran and what it did, when it runs next."""
    from ingestion.freshness import outcome_summary

    return {
        "resyncable": resyncable,
        "schedule": source.schedule,
        "schedule_label": Schedule(source.schedule).label if source.schedule in Schedule.values else "",
        "paused": source.paused,
        "hidden_while_paused": source.hidden_while_paused,
        "last_synced_at": source.last_synced_at,
        "last_synced_ago": _ago(source.last_synced_at) if source.last_synced_at else "",
        "next_sync_at": source.next_sync_at,
        "next_sync_in": _in(source.next_sync_at) if source.next_sync_at else "",
        "last_sync_summary": outcome_summary(source.last_sync) if resyncable else "",
        "last_sync_removed": source.last_sync.get("removed_pages", [])[:20] if resyncable else [],
        "last_sync_error": source.last_sync.get("error", ""),
    }


def _in(moment: Any) -> str:
    if moment <= timezone.now() + timedelta(seconds=60):
        return "in a minute"
    return "in " + timeuntil(moment, timezone.now()).split(",")[0]


def schedule_choices() -> list[tuple[str, str]]:
    return list(Schedule.choices)


def skipped_pages(source: Source, *, limit: int = 500) -> list[dict[str, Any]]:
    """A source's skipped pages with their reasons and the size of their text, for the pages list, where
    the admin can index one anyway (the API pages them)."""
    from ingestion.failures import skip_label

    with workspace_scope(source.workspace_id):
        documents = source.documents.filter(status=Status.SKIPPED).order_by("id")[:limit]
        return [
            {
                "id": d.id,
                "url": d.url,
                "title": d.title if d.title and d.title != d.url else "",
                "reason": skip_label(d.skip_reason) if d.skip_reason else "",
                "error": d.error,
                "error_detail": d.error_detail,
                "chars": d.skipped_chars,
                "keep_short": d.keep_short,
                # A search page with no text of its own has nothing to index (lifecycle.index_anyway refuses).
                "nothing_to_index": EMPTY_SEARCH_PAGE
                if d.skip_reason == "search_page" and not d.skipped_chars
                else "",
            }
            for d in documents
        ]


def failed_pages(source: Source, *, limit: int = 500) -> list[dict[str, Any]]:
    """A source's failed pages with their reasons, for the failed-pages list (the API pages them)."""
    from ingestion.failures import FAILURE_LABELS

    with workspace_scope(source.workspace_id):
        documents = source.documents.filter(status=Status.FAILED).order_by("id")[:limit]
        return [
            {
                "url": d.url,
                "title": d.title if d.title and d.title != d.url else "",
                "error": d.error,
                "error_detail": d.error_detail,
                "failure": FAILURE_LABELS.get(d.failure_class, ("", ""))[0],
                "attempts": d.attempts,
                "updated_at": d.updated_at,
            }
            for d in documents
        ]


def _ago(moment: Any) -> str:
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return timesince(moment, timezone.now()).split(",")[0] + " ago"


def _digest(values: Any) -> str:
    return hashlib.sha1("\x1f".join(str(v) for v in values).encode(), usedforsecurity=False).hexdigest()[:16]


def source_preview_titled(source: Source) -> dict[str, Any]:
    """source_preview, with each sampled chunk naming its document."""
    from sources.selectors import source_preview

    with workspace_scope(source.workspace_id):
        preview = source_preview(source=source)
    titles = {d["id"]: d["title"] for d in preview["documents"]}
    for chunk in preview["chunks"]:
        chunk["document_title"] = titles.get(chunk["document_id"]) or f"Document {chunk['document_id']}"
    for doc in preview["documents"]:
        doc["excerpt_cut"] = doc["chars"] > len(doc["excerpt"])  # said on the page, not cut silently
    return preview
