"""Crawling sources: expand a source into pages, fetch and extract each page, hand it to indexing.

The tasks in ingestion/tasks.py are thin; the decisions live here. Each page's fate is one of:
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

from ingestion.crawl.errors import FetchError, PermanentFetchError, RateLimitedError, TransientFetchError
from ingestion.crawl.registry import crawl_page
from ingestion.extract import DroppedPage
from ingestion.safety import FetchPolicy
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

FRIENDLY_RATE_LIMIT = "The site is rate-limiting us; we'll retry automatically."


def fetch_policy() -> FetchPolicy:
    return FetchPolicy(
        allow_private_networks=settings.CRAWL_ALLOW_PRIVATE_NETWORKS,
        allowed_networks=tuple(settings.CRAWL_ALLOWED_NETWORKS),
        max_bytes=settings.CRAWL_MAX_SOURCE_BYTES,
        total_timeout_s=settings.CRAWL_FETCH_TIMEOUT,
    )


# --- expanding a source into pages ----------------------------------------------------------------


def source_expand(*, source: Source) -> list[int]:
    """Claim a pending source, list its pages as documents, and return the ids of those to crawl."""
    from ingestion.crawl.feed import fetch_feed
    from ingestion.crawl.sitemap import fetch_sitemap

    with workspace_scope(source.workspace_id):
        claimed = Source.objects.filter(id=source.id, status=Status.PENDING).update(
            status=Status.CRAWLING, error="", error_detail="", notice=""
        )
        if claimed != 1:
            return []
        url = source.config["url"]
        notice = ""
        try:
            if source.kind == "sitemap":
                limit = source.config.get("max_pages") or settings.CRAWL_MAX_PAGES_PER_SOURCE
                result = fetch_sitemap(
                    url, fetch_policy(), max_pages=min(limit, settings.CRAWL_MAX_PAGES_PER_SOURCE)
                )
                urls = result.urls
                if result.truncated:
                    notice = (
                        f"This site lists more pages than the limit of {len(urls)}; "
                        f"{'at least ' if result.left_out else ''}{result.left_out or 'some'} were left out."
                    )
                if not urls:
                    raise PermanentFetchError("The sitemap lists no pages.", "; ".join(result.errors))
            elif source.kind == "feed":
                feed = fetch_feed(url, fetch_policy())
                urls = list(dict.fromkeys(item.url for item in feed.items if item.url))
                if len(urls) > settings.CRAWL_MAX_PAGES_PER_SOURCE:
                    kept = settings.CRAWL_MAX_PAGES_PER_SOURCE
                    notice = f"The feed has {len(urls)} items; the first {kept} were kept."
                    urls = urls[:kept]
                if not urls:
                    raise PermanentFetchError("The feed has no items with links.", url)
            else:
                urls = [url]
            return _documents_for(source, urls, notice)
        except FetchError as exc:
            Source.objects.filter(id=source.id).update(
                status=Status.FAILED, error=exc.message[:500], error_detail=exc.detail
            )
        except Exception:
            # Unexpected: fail the source with the trace for operators instead of leaving it crawling.
            log.exception("expanding source %s failed", source.id)
            Source.objects.filter(id=source.id).update(
                status=Status.FAILED,
                error="Something went wrong while reading this source.",
                error_detail=traceback.format_exc(),
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
            crawled = crawl_page(
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
            return PageOutcome()
        if extracted is None:
            return _fail(
                document, "This address is not a web page we can read.", f"content type {page.content_type}"
            )
        content_hash = hashlib.sha256(extracted.text.encode()).hexdigest()
        if content_hash == document.content_hash and document.chunks.exists():
            # Unchanged since the last crawl: nothing to re-embed.
            Document.objects.filter(id=document.id).update(
                status=Status.DONE, error="", error_detail="", **fetched
            )
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
        return PageOutcome(index=True)


def _check_robots(url: str) -> None:
    from ingestion.crawl.robots import robots_allows

    if not robots_allows(url, fetch_policy()):
        raise PermanentFetchError(
            "The site's robots.txt asks crawlers not to fetch this page.", f"disallowed: {url}"
        )


def _note(document: Document, message: str, detail: str, *, status: str) -> None:
    Document.objects.filter(id=document.id).update(status=status, error=message[:500], error_detail=detail)


def _fail(document: Document, message: str, detail: str) -> PageOutcome:
    _note(document, message, detail, status=Status.FAILED)
    return PageOutcome()


def page_timed_out(*, document: Document) -> None:
    with workspace_scope(document.workspace_id):
        _fail(
            document, "This page took too long to crawl.", f"time limit of {settings.CRAWL_PAGE_TIME_LIMIT}s"
        )


# --- recrawl and the sweeper ------------------------------------------------------------------------


def source_recrawl(*, source: Source) -> bool:
    """Crawl a URL source again; unchanged pages are not re-embedded."""
    from ingestion import tasks
    from sources.kinds import CRAWLED_KINDS

    if source.kind not in CRAWLED_KINDS:
        return False
    with workspace_scope(source.workspace_id):
        updated = (
            Source.objects.filter(id=source.id)
            .exclude(status__in=[Status.PENDING, Status.CRAWLING])
            .update(status=Status.PENDING)
        )
    if updated:
        workspace_id, source_id = source.workspace_id, source.id
        transaction.on_commit(
            lambda: tasks.crawl_source.delay(workspace_id=workspace_id, source_id=source_id)
        )
    return bool(updated)


def sweep_stalled() -> dict[str, int]:
    """Fail what has been in flight for too long, so nothing stays pending or running forever.

    A page whose worker was killed (time limit, crash, deploy) never reports back; its row keeps an old
    `updated_at`. Operators see the reason; the source's status is then derived again.
    """
    from ingestion.services import source_refresh_status

    cutoff = timezone.now() - timezone.timedelta(seconds=settings.CRAWL_STALLED_AFTER)
    stalled = Document.unscoped.filter(
        status__in=[Status.PENDING, Status.CRAWLING, Status.INDEXING], updated_at__lt=cutoff
    ).values_list("id", "workspace_id", "source_id", "status")
    failed = 0
    touched: dict[int, int] = {}
    for document_id, workspace_id, source_id, status in stalled[:5000]:
        message = {
            Status.PENDING: "This page waited too long for a crawler; we stopped waiting.",
            Status.CRAWLING: "The crawl of this page was interrupted.",
            Status.INDEXING: "Indexing this page was interrupted.",
        }[status]
        failed += Document.unscoped.filter(id=document_id, status=status, updated_at__lt=cutoff).update(
            status=Status.FAILED,
            error=message,
            error_detail=f"stalled in {status} since before {cutoff.isoformat()}",
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
