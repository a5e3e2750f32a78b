"""Keeping a connected source in step with its provider: list what the source holds now, fetch only what
changed, remove what is gone, on evidence.

A connected kind (integrations/kind.py) answers two questions: `listing` (every object the source holds
now, with a version such as Notion's last_edited_time or Drive's version) and `fetch` (one object's title,
address and text). Everything else is here: documents for new objects, unchanged ones left alone (not
re-embedded), changed ones fetched and indexed on the index queue (their chunks replaced in one
transaction by ingestion.indexing), and objects no longer listed removed with their chunks. A listing
raises on a 5xx or a time-out, so those never remove anything.

A removal, on the provider's evidence (left out of a complete listing, or a 404/403 or trashed file when
fetched), takes the document's chunks at once, so answers stop citing it; its row stays, marked with the
reason (ingestion.freshness.REMOVAL_REASONS), until the sync ends, which deletes it and counts it in the
sync's outcome, as a website's sync does.

Each step's fate, like a web page's (ingestion/pages.py): done, retried (transient, with backoff),
requeued (rate-limited: no attempt spent), failed (with the reason), or the connection needs a reconnect.
"""

from __future__ import annotations

import hashlib
import logging
import traceback
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ingestion.admission import Admission, admit_pages
from ingestion.jobs.claims import claim_pending_source
from ingestion.kinds.registry import get_kind
from ingestion.status import source_refresh_status
from integrations.connections import mark_needs_reconnect, reconnect_message
from integrations.errors import (
    ObjectGone,
    ProviderError,
    ProviderRateLimited,
    ProviderTransient,
    ReconnectNeeded,
)
from integrations.models import Connection
from retrieval.cache import searches_changed
from retrieval.vectors import delete_chunk_vectors
from sources.models import ACTIVE_STATUSES, Chunk, Document, Source, Status
from sources.tenancy import workspace_scope

if TYPE_CHECKING:
    from integrations.kind import ConnectedKind  # which imports this module

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Item:
    """One object a source holds now, as its listing sees it. The same `version` as the stored copy's means
    "unchanged, don't fetch" only for a copy fetched from `trusted_from` on: a version with a coarse clock
    (Notion's last_edited_time, rounded down to the minute) is shared by every edit made in its minute, so
    a copy fetched during that minute may miss the last of them. None: the version tells every edit apart
    (Drive's `version` counter)."""

    object_id: str
    title: str
    url: str
    version: str
    trusted_from: datetime | None = None


@dataclass(frozen=True)
class Fetched:
    title: str
    url: str
    text: str
    version: str


@dataclass(frozen=True)
class Outcome:
    """What the task should do next: nothing, index the document, retry later, or requeue later."""

    index: bool = False
    retry_in: float | None = None
    requeue_in: float | None = None
    document_ids: tuple[int, ...] = ()


def connection_of(source: Source) -> Connection | None:
    return Connection.objects.filter(id=source.config.get("connection")).first()


def _requeue_wait(exc: ProviderRateLimited) -> float:
    return min(max(exc.retry_after_s, 0.1), settings.INTEGRATIONS_MAX_RETRY_AFTER)


# --- a source: list, then fetch what changed ------------------------------------------------------------


def source_sync(*, source: Source, attempt: int = 0, requeues: int = 0) -> Outcome:
    with workspace_scope(source.workspace_id):
        # Opens a sync (ingestion.freshness): when its documents settle, the outcome and dates are written.
        if not claim_pending_source(source=source, to=Status.CRAWLING, opens_sync=True):
            return Outcome()
        kind = cast("ConnectedKind", get_kind(source.kind))  # a connected source's kind
        connection = connection_of(source)
        if connection is None or not connection.active:
            return _source_needs_reconnect(source, connection)
        known = dict(source.state.get("objects", {}))
        try:
            items = kind.listing(source=source, connection=connection, known=list(known))
        except ReconnectNeeded as exc:
            mark_needs_reconnect(connection=connection, message=exc.message, detail=exc.detail)
            return Outcome()
        except ProviderRateLimited as exc:
            if requeues >= settings.INTEGRATIONS_MAX_RATE_LIMIT_REQUEUES:
                return _source_failed(source, "The provider kept rate-limiting us; resync later.", exc.detail)
            _source_waits(source, exc.message, exc.detail)
            return Outcome(requeue_in=_requeue_wait(exc))
        except ProviderTransient as exc:
            backoff = settings.INTEGRATIONS_RETRY_BACKOFF
            if attempt >= len(backoff):
                return _source_failed(source, f"{exc.message} Its documents were kept.", exc.detail)
            _source_waits(source, f"{exc.message} We'll retry automatically.", exc.detail)
            return Outcome(retry_in=backoff[attempt])
        except ProviderError as exc:
            return _source_failed(source, exc.message, exc.detail)
        except Exception:
            log.exception("listing source %s failed", source.id)
            return _source_failed(
                source, "Something went wrong while listing this source.", traceback.format_exc()
            )
        if not items:
            _apply_listing(source, [], known)
            _source_failed(
                source,
                "Nothing picked for this source is shared with Grounded anymore (deleted or unshared).",
                "the listing is empty",
            )
            refresh_status(source_id=source.id)  # nothing is in flight: the sync ends, counting removals
            return Outcome()
        to_fetch, admitted = _apply_listing(source, items, known)
        if to_fetch is None:
            return _source_failed(source, admitted.notice, f"plan quota: {admitted.stopped}")
        refresh_status(source_id=source.id)
        return Outcome(document_ids=tuple(to_fetch))


def _apply_listing(
    source: Source, items: list[Item], known: dict[str, int]
) -> tuple[list[int] | None, Admission]:
    """Documents for the listed objects; the ids of those to fetch. Unlisted documents are removed. New
    objects beyond the plan's documents quota are left out with a notice on the source; None when the
    plan leaves room for none of them and the source has no documents yet (nothing is stored), with
    the admission saying why."""
    with transaction.atomic():
        # What this sync did to each document, for its outcome (ingestion.freshness): set below and when
        # fetched.
        source.documents.update(sync_outcome="")
        documents = {d.id: d for d in source.documents.all()}
        new = list(dict.fromkeys(i.object_id for i in items if known.get(i.object_id, -1) not in documents))
        admitted = admit_pages(source=source, new_urls=new, refetch=0, crawl=False)
        if new and not documents and not admitted.new_urls:
            return None, admitted
        left_out = set(new) - set(admitted.new_urls)
        items = [item for item in items if item.object_id not in left_out]
        objects: dict[str, int] = {}
        to_fetch: list[int] = []
        for item in items:
            document = documents.get(known.get(item.object_id, -1))
            if document is None:
                document = Document.objects.create(
                    source=source, url=item.url[:2000], title=item.title[:500] or item.url[:500]
                )
            objects[item.object_id] = document.id
            unchanged = (
                document.last_modified == item.version
                and document.status == Status.DONE
                and _fetched_after(document, item.trusted_from)
                and document.chunks.exists()
            )
            if unchanged:
                Document.objects.filter(id=document.id).update(sync_outcome="unchanged")
                continue
            # No deadline: its source's backlog publishes it in a wave (lifecycle.pump_pages).
            Document.objects.filter(id=document.id).update(
                status=Status.PENDING, error="", error_detail="", due_by=None
            )
            to_fetch.append(document.id)
        kept = set(objects.values())
        condemn(source=source, document_ids=list(documents.keys() - kept), reason="removed_unpicked")
        Source.objects.filter(id=source.id).update(
            state={
                **source.state,
                "quota_stopped": admitted.stopped,
                "objects": objects,
                "listed_at": timezone.now().isoformat(),
            },
            pages_total=len(items),
            notice=admitted.notice[:500],
        )
    return to_fetch, admitted


def _fetched_after(document: Document, moment: datetime | None) -> bool:
    """Whether the stored copy is younger than any edit its version could hide (Item.trusted_from): if not,
    it is fetched again, and an unchanged text (same hash) is not embedded again."""
    return moment is None or (document.fetched_at is not None and document.fetched_at >= moment)


def document_remove(*, document: Document) -> None:
    """Gone upstream: the document and its chunks go, through the store first (vectors, keyword stats)."""
    with transaction.atomic():
        chunk_ids = [
            str(i) for i in Chunk.objects.filter(document_id=document.id).values_list("id", flat=True)
        ]
        delete_chunk_vectors(workspace_id=document.workspace_id, chunk_ids=chunk_ids)
        Document.objects.filter(id=document.id).delete()


def condemn(*, source: Source, document_ids: list[int], reason: str) -> None:
    """Gone upstream, on evidence: the documents' chunks go now, through the store first; the rows stay,
    settled and marked with `reason`, until the sync ends (ingestion.freshness.finish deletes and counts
    them)."""
    if not document_ids:
        return
    with transaction.atomic():
        chunks = Chunk.objects.filter(document_id__in=document_ids)
        chunk_ids = [str(i) for i in chunks.values_list("id", flat=True)]
        delete_chunk_vectors(workspace_id=source.workspace_id, chunk_ids=chunk_ids)
        chunks.delete()
        condemned = Document.objects.filter(id__in=document_ids)
        # Left in flight by an interrupted sync, a row would keep this sync from ever ending.
        condemned.filter(status__in=ACTIVE_STATUSES).update(status=Status.DONE)
        condemned.update(sync_outcome=reason, error="", error_detail="")


def _source_waits(source: Source, message: str, detail: str) -> None:
    Source.objects.filter(id=source.id).update(
        status=Status.PENDING, notice=message[:500], error_detail=detail
    )


def _source_failed(source: Source, message: str, detail: str) -> Outcome:
    Source.objects.filter(id=source.id).update(status=Status.FAILED, error=message[:500], error_detail=detail)
    return Outcome()


def _source_needs_reconnect(source: Source, connection: Connection | None) -> Outcome:
    message = (
        reconnect_message(connection) if connection else "Connect the account again to sync this source."
    )
    detail = (
        "the connection is gone"
        if connection is None
        else f"connection {connection.id} is {connection.status}"
    )
    return _source_failed(source, message, detail)


# --- one document --------------------------------------------------------------------------------------


def document_sync(*, document: Document, attempt: int = 0, requeues: int = 0) -> Outcome:
    with workspace_scope(document.workspace_id):
        # The deadline its wave gave it is cleared: crawling, it is judged by updated_at (as a web page).
        claimed = Document.objects.filter(
            id=document.id, status__in=[Status.PENDING, Status.CRAWLING]
        ).update(status=Status.CRAWLING, due_by=None, updated_at=timezone.now())
        if claimed != 1:
            return Outcome()
        source = document.source
        object_id = next((o for o, d in source.state.get("objects", {}).items() if d == document.id), None)
        connection = connection_of(source)
        if object_id is None:
            return _document_failed(document, "This page is no longer part of the source.", "not listed")
        if connection is None or not connection.active:
            note = reconnect_message(connection) if connection else "Connect the account again."
            return _document_failed(document, note, "connection inactive")
        # When the copy was read, for Item.trusted_from: from the start, as an edit made while the fetch
        # runs may be missed by it.
        fetch_started = timezone.now()
        try:
            kind = cast("ConnectedKind", get_kind(source.kind))  # a connected source's kind
            fetched = kind.fetch(source=source, connection=connection, object_id=object_id)
        except ObjectGone:
            if document.content_hash:
                condemn(source=source, document_ids=[document.id], reason="removed_deleted")
            else:
                document_remove(document=document)  # never had text: there is no removal to count
            return Outcome()
        except ReconnectNeeded as exc:
            mark_needs_reconnect(connection=connection, message=exc.message, detail=exc.detail)
            return Outcome()
        except ProviderRateLimited as exc:
            if requeues >= settings.INTEGRATIONS_MAX_RATE_LIMIT_REQUEUES:
                return _document_failed(
                    document, "The provider kept rate-limiting us; resync later.", exc.detail
                )
            wait = _requeue_wait(exc)
            _note(document, exc.message, exc.detail, status=Status.PENDING, waits=wait)
            return Outcome(requeue_in=wait)
        except ProviderTransient as exc:
            backoff = settings.INTEGRATIONS_RETRY_BACKOFF
            if attempt >= len(backoff):
                return _document_failed(document, exc.message, exc.detail)
            _note(
                document,
                f"{exc.message} We'll retry automatically.",
                exc.detail,
                status=Status.PENDING,
                waits=backoff[attempt],
            )
            return Outcome(retry_in=backoff[attempt])
        except ProviderError as exc:
            return _document_failed(document, exc.message, exc.detail)
        content_hash = hashlib.sha256(fetched.text.encode()).hexdigest()
        common = {
            "title": (fetched.title or fetched.url)[:500],
            "url": fetched.url[:2000],
            "last_modified": fetched.version[:100],
            "fetched_at": fetch_started,
            "error": "",
            "error_detail": "",
        }
        if content_hash == document.content_hash and document.chunks.exists():
            Document.objects.filter(id=document.id).update(
                status=Status.DONE, sync_outcome="unchanged", **common
            )
            if (common["title"], common["url"]) != (document.title, document.url):
                # Renamed or moved with the same text: search answers show the title and URL.
                searches_changed(document.workspace_id)
            return Outcome()
        if not fetched.text.strip():
            return _document_failed(document, "This page has no text to index.", "empty after rendering")
        Document.objects.filter(id=document.id).update(
            status=Status.INDEXING,
            text=fetched.text,
            content_hash=content_hash,
            sync_outcome="changed" if document.content_hash else "added",
            **common,
        )
        return Outcome(index=True)


def _note(document: Document, message: str, detail: str, *, status: str, waits: float | None = None) -> None:
    """`waits`: the document waits on purpose (a retry, a rate limit) and keeps its place in its source's
    wave meanwhile; its deadline (`due_by`, what the sweeper judges it by) is past the wait."""
    due_by = None
    if waits is not None:
        due_by = timezone.now() + timedelta(seconds=waits + settings.CRAWL_STALLED_AFTER)
    Document.objects.filter(id=document.id).update(
        status=status, error=message[:500], error_detail=detail, due_by=due_by
    )


def _document_failed(document: Document, message: str, detail: str) -> Outcome:
    _note(document, message, detail, status=Status.FAILED)
    return Outcome()


def refresh_status(*, source_id: int) -> None:
    """The source's counters and status from its documents (a source whose connection needs a reconnect
    keeps saying so: the kind's `settle`)."""
    source_refresh_status(source_id=source_id)
