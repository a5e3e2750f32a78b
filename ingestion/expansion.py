"""Expanding a fetching source into pages: its kind lists the addresses (SourceKind.expand), and each becomes
a document to crawl, one page job each (ingestion/pages.py).

Every expansion opens a sync (ingestion/freshness.py). A re-sync is cheap: a page whose sitemap <lastmod> is
what it was is not fetched; known pages are fetched again conditionally (ingestion/pages.py). The plan admits
new pages and fetches up to its quotas (ingestion/admission.py); pages a complete listing leaves out are
struck, and removed only on evidence (see freshness.py).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F

from checked_http.errors import FetchError, PermanentFetchError
from config.logging import operator_detail
from ingestion import freshness
from ingestion.admission import Admission, admit_pages
from ingestion.crawl.fetch import fetch_policy
from ingestion.crawl.robots import allowed_by_robots
from ingestion.jobs import claims
from ingestion.kinds.base import Expansion
from ingestion.kinds.registry import get_kind
from ingestion.pages import fetch_again
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)


def source_expand(*, source: Source) -> list[int]:
    """Claim a pending source, open a sync, list its pages as documents, and return the ids of those to
    crawl."""
    with workspace_scope(source.workspace_id):
        if not claims.claim_pending_source(source=source, to=Status.CRAWLING, opens_sync=True):
            return []
        try:
            expansion = get_kind(source.kind).expand(source=source)
            return _documents_for(source, expansion)
        except FetchError as exc:
            _listing_failed(source, exc.message, exc.detail)
        except SoftTimeLimitExceeded:
            raise  # the task's time limit: the task decides what a timeout means
        except Exception:
            # Unexpected: fail the source with the trace for operators instead of leaving it crawling.
            log.exception("expanding source %s failed", source.id)
            _listing_failed(source, "Something went wrong while reading this source.", traceback.format_exc())
        return []


def _listing_failed(source: Source, message: str, detail: str) -> None:
    """The listing could not be read. A source never indexed fails; one with pages keeps them (a listing
    that failed is no evidence against them) and says so, until the next sync."""
    # Skipped pages are known pages too: the next sync decides about them again.
    indexed = Document.objects.filter(source_id=source.id, status__in=[Status.DONE, Status.SKIPPED]).exists()
    if indexed:
        Source.objects.filter(id=source.id).update(
            status=Status.DONE, notice=f"The last sync couldn't read the listing: {message}"[:500]
        )
    else:
        Source.objects.filter(id=source.id).update(
            status=Status.FAILED, error=message[:500], error_detail=operator_detail(detail)
        )
    freshness.finish(source_id=source.id, listing_error=message)


def _documents_for(source: Source, expansion: Expansion) -> list[int]:
    # Pages robots.txt disallows are neither queued nor fetched: a listing filters them (outside any page
    # cap) and says how many; this catches the kinds that list without filtering (a single page, a feed
    # item kept from an earlier sync). They are a count on the source, not failures.
    allowed = allowed_by_robots(fetch_policy())
    urls = [u for u in expansion.urls if allowed(u)]
    skipped = expansion.skipped_by_robots + len(expansion.urls) - len(urls)
    if expansion.urls and not urls:
        raise PermanentFetchError(
            "The site's robots.txt asks crawlers not to fetch "
            + ("this page." if len(expansion.urls) == 1 else "any of the pages listed."),
            f"disallowed by robots.txt: {', '.join(expansion.urls[:5])}",
        )
    with transaction.atomic():
        existing = {d.url: d for d in source.documents.all()}
        source.documents.update(sync_outcome="")
        listed = set(urls)  # admission below only leaves out new pages: every known one stays listed
        plan = _admit(source, expansion, urls, existing, allowed)
        Document.objects.bulk_create(
            [
                Document(
                    workspace_id=source.workspace_id,
                    source=source,
                    url=u,
                    title=u,
                    lastmod=expansion.lastmod.get(u, ""),
                )
                for u in plan.urls
                if u not in existing
            ],
            batch_size=500,
        )
        unchanged = _mark_known(source, plan, existing, listed, expansion.lastmod)
        queued = source.documents.filter(url__in=listed).exclude(id__in=[*unchanged, *plan.held_back])
        queued.update(unlisted_strikes=0)
        to_crawl = source.documents.filter(id__in=[*queued.values_list("id", flat=True), *plan.rechecked])
        # Known pages keep their ETag and content hash, so fetching them again is incremental, and the
        # admin's "index it anyway" (keep_short), so a skipped page they kept stays kept.
        # updated_at too: the sweeper judges pending pages by it, and a page indexed days ago is not stalled.
        to_crawl.update(**fetch_again())
        _note_listing(source, expansion, plan, skipped)
        return list(to_crawl.order_by("id").values_list("id", flat=True))


@dataclass(frozen=True)
class _Plan:
    """What a sync does with a listing's pages: which are kept (`urls`: the known ones and the new ones the
    plan admitted), which known ones wait for the next sync, and which unlisted ones are fetched again."""

    urls: list[str]
    held_back: set[int]
    rechecked: list[int]
    admitted: Admission


def _admit(
    source: Source,
    expansion: Expansion,
    urls: list[str],
    existing: dict[str, Document],
    allowed: Callable[[str], bool],
) -> _Plan:
    """Strike the pages a complete listing left out, and let the plan admit new pages and fetches."""
    lastmod = expansion.lastmod
    listed = set(urls)
    unlisted = [d for url, d in existing.items() if url not in listed]
    condemned = _strike_unlisted(source, unlisted) if expansion.complete else set()
    # A feed's items that left it are fetched again too: every fetch counts against the plan.
    recheck = (
        [d for d in unlisted if d.id not in condemned and allowed(d.url)]
        if expansion.recheck_unlisted
        else []
    )
    # The plan admits new pages up to its documents quota and fetches up to today's crawl pages;
    # listed known pages are fetched again before the re-checked ones that left the listing.
    known = [u for u in urls if u in existing and not _unchanged(existing[u], lastmod)]
    admitted = admit_pages(
        source=source, new_urls=[u for u in urls if u not in existing], refetch=len(known) + len(recheck)
    )
    if urls and not existing and not admitted.new_urls:
        raise PermanentFetchError(admitted.notice, f"plan quota: {admitted.stopped}")
    # Known pages not fetched today keep what they have, and this sync says they were held back.
    held_back = {existing[u].id for u in known[admitted.refetch :]}
    rechecks_granted = max(admitted.refetch - len(known), 0)
    held_back |= {d.id for d in recheck[rechecks_granted:]}
    admitted_new = set(admitted.new_urls)
    return _Plan(
        urls=[u for u in urls if u in existing or u in admitted_new],
        held_back=held_back,
        rechecked=[d.id for d in recheck[:rechecks_granted]],
        admitted=admitted,
    )


def _mark_known(
    source: Source, plan: _Plan, existing: dict[str, Document], listed: set[str], lastmod: Mapping[str, str]
) -> list[int]:
    """Known pages the sitemap says are unchanged are done without a request, those held back say so, and
    the rest take their new <lastmod>. Returns the unchanged ones."""
    unchanged, refetch = [], []
    for url in plan.urls:
        document = existing.get(url)
        if document is None or document.id in plan.held_back:
            continue
        if _unchanged(document, lastmod):
            unchanged.append(document.id)  # the sitemap says so: no request needed
        else:
            refetch.append(document)
    source.documents.filter(id__in=unchanged).update(sync_outcome="unchanged", unlisted_strikes=0)
    source.documents.filter(id__in=plan.held_back, url__in=listed).update(unlisted_strikes=0)
    source.documents.filter(id__in=plan.held_back).update(sync_outcome=freshness.HELD_BACK)
    for document in refetch:
        document.lastmod = lastmod.get(document.url, document.lastmod)
    Document.objects.bulk_update(refetch, ["lastmod"], batch_size=500)
    return unchanged


def _note_listing(source: Source, expansion: Expansion, plan: _Plan, skipped: int) -> None:
    """What the admin sees of this listing: its pages, and its notice (the kind's, the plan's, robots')."""
    notice = f"{expansion.notice} {plan.admitted.notice}".strip()
    if skipped:
        robots = f"{skipped} listed page{'s' if skipped != 1 else ''} skipped by robots.txt."
        notice = f"{notice} {robots}".strip()
    state = {**(Source.objects.filter(id=source.id).values_list("state", flat=True).first() or {})}
    state["skipped_by_robots"] = skipped
    state["quota_stopped"] = plan.admitted.stopped
    Source.objects.filter(id=source.id).update(pages_total=len(plan.urls), notice=notice[:500], state=state)


def _unchanged(document: Document, lastmod: Mapping[str, str]) -> bool:
    modified = lastmod.get(document.url, "")
    return bool(modified) and modified == document.lastmod and document.status == Status.DONE


def _strike_unlisted(source: Source, unlisted: list[Document]) -> set[int]:
    """A complete listing left these pages out: one more strike each; those at the limit are condemned
    (removed when the sync ends)."""
    if not unlisted:
        return set()
    ids = [d.id for d in unlisted]
    Document.objects.filter(id__in=ids).update(unlisted_strikes=F("unlisted_strikes") + 1)
    condemned = set(
        Document.objects.filter(id__in=ids, unlisted_strikes__gte=settings.SYNC_PRUNE_AFTER).values_list(
            "id", flat=True
        )
    )
    Document.objects.filter(id__in=condemned).update(sync_outcome="removed_unlisted")
    return condemned
