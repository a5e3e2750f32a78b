"""Page jobs: fetch and extract one page of a fetching source, and hand it to indexing. A source's pages come
from its listing (ingestion/expansion.py).

The tasks in ingestion/tasks.py are thin; the decisions live here. Each page's fate is one of:
  done (indexed, or unchanged since the last crawl), retried (transient failure, with backoff),
  requeued (rate-limited: waits without spending an attempt), failed (permanent, with the reason),
  skipped (left out on purpose: too little text, only links, a search page; with the reason and the size of
  its text, and indexed anyway when the admin asks: Document.keep_short, or the source's keep_short_pages).

A known page is fetched conditionally (ETag / Last-Modified), and a body whose text hash is unchanged is not
embedded again. A 404 or 410 is a strike against the page, which is removed only on evidence (freshness.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from checked_http.errors import FetchError, PermanentFetchError, RateLimitedError, TransientFetchError
from config import metrics
from config.logging import operator_detail
from ingestion.crawl.extract import DroppedPage
from ingestion.crawl.fetch import FetchPolicy, fetch_policy
from ingestion.crawl.robots import robots_allows
from ingestion.crawl.strategies import CrawledPage, fetch_and_extract
from ingestion.failures import failure_class_of
from ingestion.files import parse_fetched_file
from ingestion.kinds.registry import get_kind
from ingestion.parsers.base import ParseError
from retrieval.vectors import delete_chunk_vectors
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

FRIENDLY_RATE_LIMIT = "The site is rate-limiting us; we'll retry automatically."
GONE_STATUSES = (404, 410)


@dataclass(frozen=True)
class PageOutcome:
    """What the task should do next: nothing, index the page, retry later, or requeue later."""

    index: bool = False
    retry_in: float | None = None
    requeue_in: float | None = None
    # Documents the page's links added to its source (a site walked by its links), to queue.
    follow: tuple[int, ...] = ()


def keeps_short_pages(document: Document, source: Source) -> bool:
    """Whether the admin asked to index this page however little text it has: for this page ("Index
    anyway"), or for every page of its source (the source's keep_short_pages option)."""
    return document.keep_short or bool(source.config.get("keep_short_pages"))


def page_policy(source: Source) -> FetchPolicy:
    """Page fetches stay on the page's site (or its www. twin) unless the source allows otherwise."""
    offsite = bool(source.config.get("offsite_redirects"))
    return dataclasses.replace(fetch_policy(), same_host_redirects_only=not offsite)


def fetch_again() -> dict[str, object]:
    """The fields that put a known page back in line to be fetched: pending, with no error, skip or attempt
    left from before. updated_at too: the sweeper judges pending pages by it."""
    return {
        "status": Status.PENDING,
        "error": "",
        "error_detail": "",
        "failure_class": "",
        "skip_reason": "",
        "skipped_chars": 0,
        "attempts": 0,
        "due_by": None,
        "updated_at": timezone.now(),
    }


def max_countdown() -> float:
    """The longest a message may wait in the broker: an ETA past the visibility timeout is redelivered to
    another worker while the first still holds it, so every wait stays well inside it."""
    visibility = float(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600))
    return max(1.0, min(settings.CRAWL_MAX_RETRY_AFTER, visibility * 0.9))


def document_crawl(*, document: Document, attempt: int, requeues: int) -> PageOutcome:
    with workspace_scope(document.workspace_id):
        claimed = Document.objects.filter(
            id=document.id, status__in=[Status.PENDING, Status.CRAWLING]
        ).update(status=Status.CRAWLING, attempts=F("attempts") + 1, due_by=None, updated_at=timezone.now())
        if claimed != 1:
            return PageOutcome()
        crawled = _fetch(document, document.source, attempt=attempt, requeues=requeues)
        if isinstance(crawled, PageOutcome):
            return crawled
        source = document.source
        follow = get_kind(source.kind).follow_links(source=source, document=document, page=crawled.page)
        return dataclasses.replace(_keep(document, crawled), follow=tuple(follow))


def _fetch(document: Document, source: Source, *, attempt: int, requeues: int) -> CrawledPage | PageOutcome:
    """The page fetched (conditionally, when known) and extracted; or, when that failed, what comes next:
    a retry, a requeue, a failure, a strike for a page gone, a skip."""
    headers = {}
    if document.etag:
        headers["If-None-Match"] = document.etag
    if document.last_modified:
        headers["If-Modified-Since"] = document.last_modified
    try:
        _check_robots(document.url)
        return fetch_and_extract(
            document.url,
            page_policy(source),
            order=source.config.get("strategies") or settings.CRAWL_STRATEGIES,
            headers=headers or None,
            keep_short=keeps_short_pages(document, source),
        )
    except RateLimitedError as exc:
        if requeues >= settings.CRAWL_MAX_RATE_LIMIT_REQUEUES:
            return _fail(
                document,
                "The site kept rate-limiting us; we stopped trying for now.",
                exc.detail,
                failure="rate_limited",
            )
        wait = exc.retry_after_s if exc.retry_after_s is not None else settings.CRAWL_RATE_LIMIT_WAIT
        wait = min(max(wait, 0.0), max_countdown())
        _note(document, FRIENDLY_RATE_LIMIT, exc.detail, status=Status.PENDING, waits_for=wait)
        return PageOutcome(requeue_in=wait)
    except TransientFetchError as exc:
        backoff = settings.CRAWL_RETRY_BACKOFF
        if attempt >= len(backoff):
            return _fail(document, exc.message, exc.detail, failure=failure_class_of(exc))
        wait = backoff[attempt]
        message = f"{exc.message} We'll retry automatically."
        _note(document, message, exc.detail, status=Status.PENDING, waits_for=wait)
        return PageOutcome(retry_in=wait)
    except (PermanentFetchError, FetchError) as exc:
        if exc.status in GONE_STATUSES:
            return _gone(document, source, exc)
        return _fail(document, exc.message, exc.detail, failure=failure_class_of(exc))
    except DroppedPage as exc:
        if exc.skipped:
            return _skip(document, exc)
        return _fail(document, exc.message, f"dropped: {exc.reason}", failure="dropped")


def _keep(document: Document, crawled: CrawledPage) -> PageOutcome:
    """Keep what the fetch brought: done when unchanged (a 304, or the same text), else the new text, to be
    indexed."""
    page, extracted = crawled.page, crawled.extracted
    fetched = {
        "etag": page.headers.get("etag", "")[:300],
        "last_modified": page.headers.get("last-modified", "")[:100],
        "fetched_at": timezone.now(),
        "error": "",
        "error_detail": "",
        "failure_class": "",
        "skip_reason": "",
        "skipped_chars": 0,
        "gone_strikes": 0,
        "gone_seen_at": None,
    }
    if page.not_modified:
        Document.objects.filter(id=document.id).update(
            status=Status.DONE, sync_outcome="unchanged", **fetched
        )
        metrics.PAGES_CRAWLED.labels(outcome="unchanged").inc()
        return PageOutcome()
    if extracted is None:
        try:
            extracted = parse_fetched_file(page)
        except ParseError as exc:
            detail = f"{exc.reason}: {exc.detail} ({page.content_type})"
            return _fail(document, exc.message, detail, failure="unreadable")
    content_hash = hashlib.sha256(extracted.text.encode()).hexdigest()
    if content_hash == document.content_hash and document.chunks.exists():
        # Unchanged since the last crawl: nothing to re-embed.
        Document.objects.filter(id=document.id).update(
            status=Status.DONE, sync_outcome="unchanged", **fetched
        )
        metrics.PAGES_CRAWLED.labels(outcome="unchanged").inc()
        return PageOutcome()
    Document.objects.filter(id=document.id).update(
        status=Status.INDEXING,
        title=(extracted.title or document.url)[:500],
        text=extracted.text,
        language=(extracted.language or "")[:16],
        content_hash=content_hash,
        sync_outcome="changed" if document.content_hash else "added",
        **fetched,
    )
    metrics.PAGES_CRAWLED.labels(outcome="fetched").inc()
    return PageOutcome(index=True)


def _gone(document: Document, source: Source, exc: FetchError) -> PageOutcome:
    """A 404 or 410: one strike per sync (a retry within the same sync doesn't count twice); at the
    limit, the page is condemned and removed when the sync ends."""
    this_sync = source.sync_started_at or timezone.now()
    current = Document.objects.filter(id=document.id).values("gone_strikes", "gone_seen_at").first() or {}
    strikes = current.get("gone_strikes", 0)
    if current.get("gone_seen_at") != this_sync:
        strikes += 1
    condemned = strikes >= settings.SYNC_PRUNE_AFTER
    Document.objects.filter(id=document.id).update(
        gone_strikes=strikes,
        gone_seen_at=this_sync,
        sync_outcome="removed_gone" if condemned else "",
    )
    return _fail(document, exc.message, exc.detail, failure=failure_class_of(exc))


def _check_robots(url: str) -> None:
    if not robots_allows(url, fetch_policy()):
        raise PermanentFetchError(
            "The site's robots.txt asks crawlers not to fetch this page.", f"disallowed by robots.txt: {url}"
        )


def _note(document: Document, message: str, detail: str, *, status: str, waits_for: float = 0.0) -> None:
    # A page that waits on purpose carries its own deadline: the sweeper leaves it alone until then.
    due_by = timezone.now() + timedelta(seconds=waits_for + settings.CRAWL_STALLED_AFTER)
    Document.objects.filter(id=document.id).update(
        status=status,
        error=message[:500],
        error_detail=operator_detail(detail),
        due_by=due_by if waits_for else None,
    )


def _fail(document: Document, message: str, detail: str, *, failure: str) -> PageOutcome:
    Document.objects.filter(id=document.id).update(
        status=Status.FAILED,
        error=message[:500],
        error_detail=operator_detail(detail),
        failure_class=failure,
        due_by=None,
    )
    metrics.PAGES_CRAWLED.labels(outcome="failed").inc()
    return PageOutcome()


def _skip(document: Document, exc: DroppedPage) -> PageOutcome:
    """A page left out on purpose: skipped, not failed, with the reason, the message for people and the size
    of its text, so the admin sees it and can index it anyway.

    A page indexed before that now says too little loses its passages (and its kept text, so a reindex
    does not bring them back): what a reader expects of a page that was emptied is that answers stop quoting
    text it no longer has. Its validators go too, so the next fetch reads the page whole: a 304 must not
    mark a page done whose passages are gone."""
    with transaction.atomic():
        chunks = Chunk.objects.filter(document_id=document.id)
        delete_chunk_vectors(
            workspace_id=document.workspace_id,
            chunk_ids=[str(i) for i in chunks.values_list("id", flat=True)],
        )
        chunks.delete()
        Document.objects.filter(id=document.id).update(
            status=Status.SKIPPED,
            error=exc.message[:500],
            error_detail=operator_detail(exc.detail),
            failure_class="",
            skip_reason=exc.reason[:20],
            skipped_chars=max(exc.text_chars, 0),
            text="",
            content_hash="",
            etag="",
            last_modified="",
            fetched_at=timezone.now(),
            gone_strikes=0,
            gone_seen_at=None,
            due_by=None,
        )
    metrics.PAGES_CRAWLED.labels(outcome="skipped").inc()
    return PageOutcome()


def page_timed_out(*, document: Document) -> None:
    with workspace_scope(document.workspace_id):
        _fail(
            document,
            "This page took too long to crawl.",
            f"time limit of {settings.CRAWL_PAGE_TIME_LIMIT}s",
            failure="timeout",
        )


def page_waits(*, document: Document, seconds: float) -> None:
    """The page's host is busy (or asks us to space requests): the page waits without being stalled."""
    due_by = timezone.now() + timedelta(seconds=seconds + settings.CRAWL_STALLED_AFTER)
    Document.objects.filter(id=document.id, status=Status.PENDING).update(due_by=due_by)
