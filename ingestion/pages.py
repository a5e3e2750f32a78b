"""Page jobs: expand a fetching source into pages, fetch and extract each page, hand it to indexing.

The tasks in ingestion/tasks.py are thin; the decisions live here (what a source lists is its kind's).
Each page's fate is one of:
  done (indexed, or unchanged since the last crawl), retried (transient failure, with backoff),
  requeued (rate-limited: waits without spending an attempt), failed (permanent, with the reason).
"""

from __future__ import annotations

import hashlib
import logging
import traceback
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config import metrics
from config.logging import operator_detail
from ingestion.crawl.errors import FetchError, PermanentFetchError, RateLimitedError, TransientFetchError
from ingestion.crawl.extract import DroppedPage
from ingestion.crawl.fetch import fetch_policy
from ingestion.crawl.strategies import fetch_and_extract
from ingestion.files import parse_fetched_file
from ingestion.kinds.registry import get_kind
from ingestion.parsers.base import ParseError
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

FRIENDLY_RATE_LIMIT = "The site is rate-limiting us; we'll retry automatically."


# --- expanding a source into pages ----------------------------------------------------------------


def source_expand(*, source: Source) -> list[int]:
    """Claim a pending source, list its pages as documents, and return the ids of those to crawl."""
    with workspace_scope(source.workspace_id):
        claimed = Source.objects.filter(id=source.id, status=Status.PENDING).update(
            status=Status.CRAWLING, error="", error_detail="", notice=""
        )
        if claimed != 1:
            return []
        try:
            expansion = get_kind(source.kind).expand(source=source)
            return _documents_for(source, expansion.urls, expansion.notice)
        except FetchError as exc:
            Source.objects.filter(id=source.id).update(
                status=Status.FAILED, error=exc.message[:500], error_detail=operator_detail(exc.detail)
            )
        except Exception:
            # Unexpected: fail the source with the trace for operators instead of leaving it crawling.
            log.exception("expanding source %s failed", source.id)
            Source.objects.filter(id=source.id).update(
                status=Status.FAILED,
                error="Something went wrong while reading this source.",
                error_detail=operator_detail(traceback.format_exc()),
            )
        return []


def _documents_for(source: Source, urls: list[str], notice: str) -> list[int]:
    with transaction.atomic():
        existing = {d.url: d for d in source.documents.all()}
        new = [
            Document(workspace_id=source.workspace_id, source=source, url=u, title=u)
            for u in urls
            if u not in existing
        ]
        Document.objects.bulk_create(new, batch_size=500)
        # A recrawl keeps known pages (their ETag and content hash make it incremental).
        source.documents.filter(url__in=urls).update(status=Status.PENDING, error="", error_detail="")
        Source.objects.filter(id=source.id).update(pages_total=len(urls), notice=notice[:500])
        return list(source.documents.filter(url__in=urls).order_by("id").values_list("id", flat=True))


# --- one page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageOutcome:
    """What the task should do next: nothing, index the page, retry later, or requeue later."""

    index: bool = False
    retry_in: float | None = None
    requeue_in: float | None = None


def document_crawl(*, document: Document, attempt: int, requeues: int) -> PageOutcome:
    with workspace_scope(document.workspace_id):
        claimed = Document.objects.filter(
            id=document.id, status__in=[Status.PENDING, Status.CRAWLING]
        ).update(status=Status.CRAWLING)
        if claimed != 1:
            return PageOutcome()
        headers = {}
        if document.etag:
            headers["If-None-Match"] = document.etag
        if document.last_modified:
            headers["If-Modified-Since"] = document.last_modified
        try:
            _check_robots(document.url)
            crawled = fetch_and_extract(
                document.url,
                fetch_policy(),
                order=document.source.config.get("strategies") or settings.CRAWL_STRATEGIES,
                headers=headers or None,
            )
        except RateLimitedError as exc:
            if requeues >= settings.CRAWL_MAX_RATE_LIMIT_REQUEUES:
                return _fail(
                    document, "The site kept rate-limiting us; we stopped trying for now.", exc.detail
                )
            _note(document, FRIENDLY_RATE_LIMIT, exc.detail, status=Status.PENDING)
            wait = exc.retry_after_s if exc.retry_after_s is not None else settings.CRAWL_RATE_LIMIT_WAIT
            return PageOutcome(requeue_in=min(max(wait, 0.0), settings.CRAWL_MAX_RETRY_AFTER))
        except TransientFetchError as exc:
            backoff = settings.CRAWL_RETRY_BACKOFF
            if attempt >= len(backoff):
                return _fail(document, exc.message, exc.detail)
            _note(document, f"{exc.message} We'll retry automatically.", exc.detail, status=Status.PENDING)
            return PageOutcome(retry_in=backoff[attempt])
        except (PermanentFetchError, FetchError) as exc:
            return _fail(document, exc.message, exc.detail)
        except DroppedPage as exc:
            return _fail(document, exc.message, f"dropped: {exc.reason}")
        page, extracted = crawled.page, crawled.extracted
        fetched = {
            "etag": page.headers.get("etag", "")[:300],
            "last_modified": page.headers.get("last-modified", "")[:100],
            "fetched_at": timezone.now(),
        }
        if page.not_modified:
            Document.objects.filter(id=document.id).update(
                status=Status.DONE, error="", error_detail="", **fetched
            )
            metrics.PAGES_CRAWLED.labels(outcome="unchanged").inc()
            return PageOutcome()
        if extracted is None:
            try:
                extracted = parse_fetched_file(page)
            except ParseError as exc:
                return _fail(document, exc.message, f"{exc.reason}: {exc.detail} ({page.content_type})")
        content_hash = hashlib.sha256(extracted.text.encode()).hexdigest()
        if content_hash == document.content_hash and document.chunks.exists():
            # Unchanged since the last crawl: nothing to re-embed.
            Document.objects.filter(id=document.id).update(
                status=Status.DONE, error="", error_detail="", **fetched
            )
            metrics.PAGES_CRAWLED.labels(outcome="unchanged").inc()
            return PageOutcome()
        Document.objects.filter(id=document.id).update(
            status=Status.INDEXING,
            title=(extracted.title or document.url)[:500],
            text=extracted.text,
            language=(extracted.language or "")[:16],
            content_hash=content_hash,
            error="",
            error_detail="",
            **fetched,
        )
        metrics.PAGES_CRAWLED.labels(outcome="fetched").inc()
        return PageOutcome(index=True)


def _check_robots(url: str) -> None:
    from ingestion.crawl.robots import robots_allows

    if not robots_allows(url, fetch_policy()):
        raise PermanentFetchError(
            "The site's robots.txt asks crawlers not to fetch this page.", f"disallowed: {url}"
        )


def _note(document: Document, message: str, detail: str, *, status: str) -> None:
    Document.objects.filter(id=document.id).update(
        status=status, error=message[:500], error_detail=operator_detail(detail)
    )


def _fail(document: Document, message: str, detail: str) -> PageOutcome:
    _note(document, message, detail, status=Status.FAILED)
    metrics.PAGES_CRAWLED.labels(outcome="failed").inc()
    return PageOutcome()


def page_timed_out(*, document: Document) -> None:
    with workspace_scope(document.workspace_id):
        _fail(
            document, "This page took too long to crawl.", f"time limit of {settings.CRAWL_PAGE_TIME_LIMIT}s"
        )
