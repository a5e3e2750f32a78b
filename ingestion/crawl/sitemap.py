"""Sitemaps: finding them on a site, reading indexes and their children, and turning them into page URLs.

`parse_sitemap` only reads bytes; `fetch_sitemap` does the fetching. A site root ("https://example.com/")
means "find the sitemap": the Sitemap: lines of robots.txt first, then /sitemap.xml and /sitemap_index.xml.
Any other URL is a sitemap address given on purpose and is fetched exactly as given.
"""

from __future__ import annotations

import html
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from ingestion.crawl.decoding import decompress_sniffed
from ingestion.crawl.fetch import FetchError, FetchPolicy, PermanentFetchError, fetch
from ingestion.crawl.robots import get_robots
from ingestion.crawl.urls import normalize_url, site_root

DEFAULT_MAX_PAGES = 500
MAX_SITEMAPS = 50  # sitemap files read per source, indexes included
MAX_DECODED_BYTES = 50 * 1024 * 1024  # the protocol's own limit for one uncompressed sitemap
PROBE_PATHS = ("sitemap.xml", "sitemap_index.xml")


class SitemapParseError(PermanentFetchError):
    """The body is not a sitemap we can read."""


class SitemapNotFoundError(PermanentFetchError):
    """No sitemap was found on the site."""


@dataclass(frozen=True)
class SitemapResult:
    urls: list[str]
    truncated: bool  # True when max_pages cut pages off
    errors: list[str] = field(default_factory=list)  # child sitemaps that failed, for people
    sitemaps: list[str] = field(default_factory=list)  # the sitemap files that were read
    # Pages past the cap in the sitemaps already read; more may sit in sitemaps not fetched.
    left_out: int = 0
    # Each page's <lastmod>, as written, where the sitemap gives one.
    lastmod: dict[str, str] = field(default_factory=dict)
    # Pages left out because `allowed` refused them (robots.txt): not fetched, not counted against the cap.
    disallowed: int = 0


def _local_name(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _unique_urls(locs: list[str], base_url: str) -> list[str]:
    urls = (normalize_url(loc, base_url) for loc in locs)
    return list(dict.fromkeys(url for url in urls if url))


_LOC = re.compile(r"<loc>\s*(?:<!\[CDATA\[)?\s*(.*?)\s*(?:\]\]>)?\s*</loc>", re.IGNORECASE | re.DOTALL)


def parse_sitemap(
    body: bytes, base_url: str, lastmod: dict[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """(page URLs, child sitemap URLs) of one sitemap body: XML urlset or sitemap index, gzipped or not, a
    plain text list of URLs, or an RSS/Atom feed. Malformed XML is read best-effort; raises SitemapParseError
    when nothing can be recovered. Pages' <lastmod> values go into `lastmod` when given."""
    try:
        body = decompress_sniffed(body, max_decoded=MAX_DECODED_BYTES)
    except PermanentFetchError as exc:
        raise SitemapParseError(
            "This sitemap's compressed file is damaged, so we couldn't read it.", exc.detail
        ) from exc
    start = body.lstrip().lstrip(b"\xef\xbb\xbf").lstrip()
    if not start.startswith(b"<"):
        return _parse_text(body, base_url), []
    try:
        root = SafeET.fromstring(body)
    except DefusedXmlException as exc:
        raise SitemapParseError(
            "This sitemap uses XML features we don't accept (entities or external references).",
            f"{base_url}: {type(exc).__name__}: {exc}",
        ) from exc
    except (ParseError, ValueError) as exc:
        return _recover(body, base_url, f"{type(exc).__name__}: {exc}")
    root_name = _local_name(root.tag)
    if root_name in ("rss", "feed", "rdf"):
        from ingestion.crawl.feed import parse_feed

        return [item.url for item in parse_feed(body, base_url).items], []
    if root_name not in ("urlset", "sitemapindex"):
        raise SitemapParseError(
            "This address doesn't hold a sitemap.",
            f"root element <{root_name}> at {base_url} is not urlset/sitemapindex",
        )
    entry_name = "url" if root_name == "urlset" else "sitemap"
    entries = [entry for entry in root if _local_name(entry.tag) == entry_name]
    locs = [_loc_of(entry) for entry in entries]
    if lastmod is not None and root_name == "urlset":
        for entry, loc in zip(entries, locs, strict=True):
            modified = _child_text(entry, "lastmod")
            page_url = normalize_url(loc, base_url) if loc else None
            if modified and page_url:
                lastmod[page_url] = modified[:40]
    urls = _unique_urls([loc for loc in locs if loc], base_url)
    return (urls, []) if root_name == "urlset" else ([], urls)


def _loc_of(entry: Element) -> str | None:
    # Only the entry's own <loc>: image:loc and video:loc sit one level deeper and are not pages.
    for child in entry:
        if _local_name(child.tag) == "loc":
            return (child.text or "").strip()
    return None


def _child_text(entry: Element, name: str) -> str:
    for child in entry:
        if _local_name(child.tag) == name:
            return (child.text or "").strip()
    return ""


def _recover(body: bytes, base_url: str, error: str) -> tuple[list[str], list[str]]:
    text = body.decode("utf-8", errors="replace")
    locs = _unique_urls([html.unescape(m) for m in _LOC.findall(text)], base_url)
    if not locs:
        raise SitemapParseError(
            "This sitemap isn't valid XML and we couldn't recover any addresses from it.",
            f"{base_url}: {error}",
        )
    return ([], locs) if "<sitemapindex" in text.lower() else (locs, [])


def _parse_text(body: bytes, base_url: str) -> list[str]:
    lines = body.decode("utf-8", errors="replace").splitlines()
    urls = _unique_urls(
        [line for line in lines if line.strip().lower().startswith(("http://", "https://"))], base_url
    )
    if not urls:
        raise SitemapParseError(
            "This address doesn't hold a sitemap.", f"{base_url}: neither XML nor a URL list"
        )
    return urls


def fetch_sitemap(
    url: str,
    policy: FetchPolicy,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    allowed: Callable[[str], bool] | None = None,
) -> SitemapResult:
    """The page URLs of a site's sitemaps (url is the site root) or of one sitemap (url is anything else).
    Child sitemaps are each read once, however the indexes point at each other."""
    normalized = normalize_url(url)
    if normalized is None:
        raise PermanentFetchError(
            "This doesn't look like a web address. Use a full address starting with https://.", repr(url)
        )
    parts = urlsplit(normalized)
    crawl = _SitemapCrawl(policy, max_pages, allowed)
    if parts.path != "/" or parts.query:
        crawl.run([url.strip()], top_level=True)
        return crawl.result()
    root = site_root(normalized)
    crawl.run(get_robots(root, policy).sitemaps, top_level=False)
    if not crawl.read_any:
        crawl.run([root + path for path in PROBE_PATHS], top_level=False, quiet=True)
    if not crawl.read_any:
        raise SitemapNotFoundError(
            "We couldn't find a sitemap on this site. Add the sitemap's address directly, "
            "or add pages one by one.",
            f"no readable sitemap in robots.txt or at {', '.join(PROBE_PATHS)} of {root}; "
            + "; ".join(crawl.errors + crawl.probe_errors),
        )
    return crawl.result()


class _SitemapCrawl:
    def __init__(self, policy: FetchPolicy, max_pages: int, allowed: Callable[[str], bool] | None) -> None:
        self.policy = policy
        self.max_pages = max_pages
        self.allowed = allowed
        self.disallowed: set[str] = set()
        self.pages: dict[str, None] = {}
        self.seen_sitemaps: set[str] = set()
        self.read: list[str] = []
        self.errors: list[str] = []
        self.probe_errors: list[str] = []
        self.truncated = False
        self.beyond_cap: set[str] = set()
        self.lastmod: dict[str, str] = {}

    @property
    def read_any(self) -> bool:
        return bool(self.read)

    def result(self) -> SitemapResult:
        lastmod = {url: self.lastmod[url] for url in self.pages if url in self.lastmod}
        return SitemapResult(
            list(self.pages),
            self.truncated,
            self.errors,
            self.read,
            len(self.beyond_cap),
            lastmod,
            len(self.disallowed),
        )

    def run(self, start: list[str], *, top_level: bool, quiet: bool = False) -> None:
        """Breadth-first through indexes. With top_level, a failure of the first sitemap is raised: it is the
        address the person gave. `quiet` keeps guessed addresses that don't exist out of the errors."""
        queue = deque((sitemap_url, top_level) for sitemap_url in start)
        while queue and not self.truncated:
            sitemap_url, raise_errors = queue.popleft()
            key = normalize_url(sitemap_url)
            if key is None or key in self.seen_sitemaps:
                continue
            if len(self.seen_sitemaps) >= MAX_SITEMAPS:
                self.errors.append(f"Stopped after reading {MAX_SITEMAPS} sitemaps; the rest were skipped.")
                self.truncated = True
                return
            self.seen_sitemaps.add(key)
            try:
                fetched = fetch(sitemap_url, self.policy)
                page_urls, children = parse_sitemap(fetched.body, fetched.final_url, self.lastmod)
            except FetchError as exc:
                if raise_errors:
                    raise
                (self.probe_errors if quiet else self.errors).append(f"{sitemap_url}: {exc.message}")
                continue
            self.read.append(sitemap_url)
            queue.extend((child, False) for child in children)
            self._add_pages(page_urls)

    def _add_pages(self, page_urls: list[str]) -> None:
        for page_url in page_urls:
            if page_url in self.pages or page_url in self.disallowed:
                continue
            if self.allowed is not None and not self.allowed(page_url):
                self.disallowed.add(page_url)
                continue
            if len(self.pages) >= self.max_pages:
                self.truncated = True
                self.beyond_cap.add(page_url)  # counted, so the source can say how many were left out
                continue
            self.pages[page_url] = None
