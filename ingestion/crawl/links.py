"""The links a fetched page offers a link-following crawl, and what the page asks of crawlers: `<a href>`
resolved against the page (or its `<base href>`), web addresses only, in canonical form; `rel="nofollow"`
links left out; `<meta name="robots">` and the `X-Robots-Tag` header read for noindex (keep the page out of
the index, its links may still be followed) and nofollow (follow none of its links)."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree
from lxml.html import HtmlElement, document_fromstring

from ingestion.crawl.scope import canonical_url
from ingestion.crawl.urls import normalize_url

# Directives that keep a page out of the index or stop its links being followed ("none" is both).
NOINDEX = frozenset({"noindex", "none"})
NOFOLLOW = frozenset({"nofollow", "none"})


@dataclass(frozen=True)
class PageLinks:
    links: tuple[str, ...]  # canonical, in document order, each once
    index: bool  # False: noindex
    follow: bool  # False: nofollow (links is then empty)


def robots_directives(values: list[str]) -> set[str]:
    """The directives in `<meta name="robots">` contents or `X-Robots-Tag` values, lower case. A value naming
    a crawler (`googlebot: noindex`) is honoured too: a site keeping a page from one crawler wants it kept."""
    directives: set[str] = set()
    for value in values:
        for part in value.split(","):
            directive = part.rsplit(":", 1)[-1].strip().lower()
            if directive:
                directives.add(directive)
    return directives


def page_links(html: str | bytes, page_url: str, *, robots_header: str = "") -> PageLinks:
    """The links of a page fetched from `page_url`: the address it was finally served from, as fetched (not
    canonical: `/docs/` and `/docs` resolve `page` differently)."""
    try:
        tree: HtmlElement = document_fromstring(html)
    except (etree.ParserError, ValueError):
        return PageLinks(links=(), index=True, follow=True)
    meta_values = [
        str(meta.get("content") or "")
        for meta in tree.iter("meta")
        if str(meta.get("name") or "").strip().lower() == "robots"
    ]
    directives = robots_directives([*meta_values, robots_header] if robots_header else meta_values)
    index, follow = not (directives & NOINDEX), not (directives & NOFOLLOW)
    if not follow:
        return PageLinks(links=(), index=index, follow=False)
    base_url = page_url
    for base in tree.iter("base"):
        if base.get("href"):
            # Not canonical: the trailing slash of a base decides where relative links point.
            base_url = normalize_url(str(base.get("href")), page_url) or page_url
            break
    links: dict[str, None] = {}
    for anchor in tree.iter("a"):
        href = anchor.get("href")
        if not href or "nofollow" in str(anchor.get("rel") or "").lower().split():
            continue
        link = canonical_url(str(href), base_url)
        if link is not None:
            links[link] = None
    return PageLinks(links=tuple(links), index=index, follow=True)
