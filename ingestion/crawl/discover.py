"""Finding the pages of a site from its domain: the home page, its sitemaps and the pages most sites have.

Sitemap pages are listed without a title (fetching hundreds of pages to name them is the crawl's job); the
home page and the common paths are fetched, kept only when they answer 200 with HTML, and named by their
<title>. Everything robots.txt disallows for us is left out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from lxml import etree
from lxml import html as lxml_html

from ingestion.crawl.extract import looks_like_not_found
from ingestion.crawl.fetch import FetchError, FetchPolicy, FetchResult, fetch
from ingestion.crawl.robots import get_robots
from ingestion.crawl.sitemap import DEFAULT_MAX_PAGES, SitemapNotFoundError, fetch_sitemap
from ingestion.crawl.urls import normalize_url, site_root

log = logging.getLogger(__name__)

COMMON_PATHS = ("about", "pricing", "features", "products", "faq", "docs", "help", "support", "contact")
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True)
class DiscoveredPage:
    url: str
    title: str | None
    found_by: str  # "home", "sitemap" or "common_path"


def discover(domain: str, policy: FetchPolicy, *, max_pages: int = DEFAULT_MAX_PAGES) -> list[DiscoveredPage]:
    """The pages of the site at `domain` ("example.com" or a URL on it), each once, at most `max_pages`.
    robots.txt errors propagate (a TransientFetchError means: try the whole discovery again later)."""
    root = site_root(domain)
    robots = get_robots(root, policy)
    pages: dict[str, DiscoveredPage] = {}

    def add(url: str, title: str | None, found_by: str) -> None:
        normalized = normalize_url(url)
        if normalized and normalized not in pages and len(pages) < max_pages and robots.allows(normalized):
            pages[normalized] = DiscoveredPage(normalized, title, found_by)

    home = _probe(root, policy)
    if home is not None:
        add(home.final_url, _title(home), "home")
    try:
        for url in fetch_sitemap(root, policy, max_pages=max_pages).urls:
            add(url, None, "sitemap")
    except SitemapNotFoundError:
        log.info("no sitemap on %s", root)
    for path in COMMON_PATHS:
        if len(pages) >= max_pages:
            break
        url = root + path
        if not robots.allows(url) or normalize_url(url) in pages:
            continue
        result = _probe(url, policy)
        if result is not None:
            add(result.final_url, _title(result), "common_path")
    return list(pages.values())


def _probe(url: str, policy: FetchPolicy) -> FetchResult | None:
    """The page at `url` if it is a real HTML page on this site, else None."""
    try:
        result = fetch(
            url,
            policy,
            headers={"Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"},
            same_host_redirects_only=True,
            raise_for_status=False,
        )
    except FetchError as exc:
        log.info("probe of %s failed: %s", url, exc.detail)
        return None
    if result.status != 200 or result.content_type not in HTML_TYPES:
        return None
    if looks_like_not_found(_title(result) or ""):
        return None  # a "not found" page served with 200
    return result


def _title(result: FetchResult) -> str | None:
    try:
        tree = lxml_html.document_fromstring(result.text())
    except ValueError:  # an XML declaration inside a str: let lxml read the bytes instead
        tree = lxml_html.document_fromstring(result.body)
    except etree.ParserError:
        return None
    title = " ".join(" ".join(tree.xpath("//title//text()")).split())
    return title or None
