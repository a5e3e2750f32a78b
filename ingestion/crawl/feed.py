"""RSS 0.9x/1.0/2.0 and Atom feeds: each item's link becomes a page to crawl.

feedparser reads the encoding from the BOM, the XML declaration or the bytes themselves, and resolves relative
links against xml:base or the feed's own URL, which we pass as Content-Location.
"""

from __future__ import annotations

import calendar
import io
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import feedparser

from ingestion.crawl.decoding import decompress_sniffed
from ingestion.crawl.fetch import FetchPolicy, PermanentFetchError, fetch
from ingestion.crawl.urls import normalize_url

MAX_DECODED_BYTES = 50 * 1024 * 1024
FEED_ACCEPT = (
    "application/rss+xml, application/atom+xml, application/rdf+xml, application/xml;q=0.9, text/xml;q=0.9, "
    "*/*;q=0.5"
)


class FeedParseError(PermanentFetchError):
    """The body is not a feed we can read."""


class NotAFeedError(FeedParseError):
    """The address serves a web page rather than a feed."""


@dataclass(frozen=True)
class FeedItem:
    url: str
    title: str
    published: datetime | None


@dataclass(frozen=True)
class Feed:
    url: str
    title: str
    items: list[FeedItem] = field(default_factory=list)


_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.IGNORECASE | re.DOTALL
)
_ALTERNATE_FEED = re.compile(
    rb"<link\b[^>]*\btype=[\"']application/(?:rss|atom)\+xml[\"'][^>]*>", re.IGNORECASE
)
_HREF = re.compile(rb"\bhref=[\"']([^\"']+)[\"']", re.IGNORECASE)


def parse_feed(body: bytes, feed_url: str, *, content_type: str = "application/xml") -> Feed:
    """Read a feed body. Raises NotAFeedError for an HTML page, FeedParseError for other unreadable bodies."""
    try:
        body = decompress_sniffed(body, max_decoded=MAX_DECODED_BYTES)
    except PermanentFetchError as exc:
        raise FeedParseError(
            "This feed's compressed file is damaged, so we couldn't read it.", exc.detail
        ) from exc
    if "html" in content_type.lower() or _HTML_START.match(body[:4096]):
        content_type = "text/html"
    # A BytesIO, never bytes: given bytes that look like a path or URL, feedparser opens or fetches them.
    parsed = feedparser.parse(
        io.BytesIO(body),
        response_headers={"content-location": feed_url, "content-type": content_type},
        sanitize_html=False,
        resolve_relative_uris=False,
    )
    if not parsed.version and not parsed.entries:
        raise _not_a_feed(body, feed_url, parsed.get("bozo_exception"))
    items: dict[str, FeedItem] = {}
    for entry in parsed.entries:
        url = _entry_url(entry, feed_url)
        if url and url not in items:
            items[url] = FeedItem(url=url, title=_clean(entry.get("title", "")), published=_published(entry))
    return Feed(url=feed_url, title=_clean(parsed.feed.get("title", "")), items=list(items.values()))


def fetch_feed(url: str, policy: FetchPolicy, *, headers: dict[str, str] | None = None) -> Feed:
    result = fetch(url, policy, headers={"Accept": FEED_ACCEPT, **(headers or {})})
    return parse_feed(
        result.body, result.final_url, content_type=result.headers.get("content-type", "application/xml")
    )


def _not_a_feed(body: bytes, feed_url: str, cause: object) -> FeedParseError:
    if _HTML_START.match(body[:4096]) or b"<html" in body[:4096].lower():
        message = "This address is a web page, not a feed."
        link = _ALTERNATE_FEED.search(body)
        href = _HREF.search(link.group(0)) if link else None
        feed_link = normalize_url(href.group(1).decode("utf-8", "replace"), feed_url) if href else None
        if feed_link:
            message += f" The page points to a feed at {feed_link}; use that address instead."
        return NotAFeedError(message, f"{feed_url}: HTML, not RSS or Atom")
    return FeedParseError(
        "We couldn't read this feed: it isn't valid RSS or Atom.", f"{feed_url}: {cause or 'no feed found'}"
    )


def _entry_url(entry: Any, feed_url: str) -> str | None:
    """The item's web page: its alternate link, else its link, else a guid/id that is a web address."""
    candidates = [
        link.get("href", "") for link in entry.get("links", []) if link.get("rel", "alternate") == "alternate"
    ]
    candidates += [entry.get("link", ""), entry.get("id", "")]
    for candidate in candidates:
        if not candidate or candidate.startswith(("tag:", "urn:")):
            continue
        url = normalize_url(candidate, feed_url)
        if url:
            return url
    return None


def _published(entry: Any) -> datetime | None:
    moment = entry.get("published_parsed") or entry.get("updated_parsed")
    if not moment:
        return None
    return datetime.fromtimestamp(calendar.timegm(moment), tz=UTC)


def _clean(text: str) -> str:
    return " ".join(text.split())
