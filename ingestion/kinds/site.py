"""A whole site walked by its links, breadth first, within a scope the admin sets (issue #53).

The listing (expand) is the start URLs and the pages already known; each crawled page's links within scope
become documents of the source as the page job fetches it (`follow_links`), and go through the same backlog,
waves and lanes as a sitemap's pages. A page's depth (links from a start URL) and the links refused, by
reason, are kept in Source.state["site"]."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from pydantic import Field, field_validator

from ingestion.admission import admit_pages
from ingestion.crawl.base import FetchedPage
from ingestion.crawl.links import page_links
from ingestion.crawl.scope import (
    Scope,
    canonical_url,
    page_cap_refusal,
    path_key,
    query_variant_refusal,
    refusal,
)
from ingestion.kinds.base import Expansion, FetchedKind
from ingestion.kinds.url import UrlConfig, checked_url
from sources.models import Document, Source

MAX_START_URLS = 20
MAX_PATTERNS = 50


def _checked_glob(value: str) -> str:
    if not value or any(char.isspace() for char in value):
        raise ValueError(f"{value!r} is not a pattern: write a path glob without spaces, such as /docs/*.")
    if not value.startswith(("/", "*")):
        raise ValueError(f"{value!r} is matched against the path and query: start it with / or *.")
    return value


class SiteConfig(UrlConfig):
    """`url` is the first start URL; `start_urls` adds more of the same site."""

    start_urls: list[str] = Field(default_factory=list, max_length=MAX_START_URLS)
    include_subdomains: bool = False
    path_prefix: str = Field(default="", max_length=300)
    include: list[str] = Field(default_factory=list, max_length=MAX_PATTERNS)
    exclude: list[str] = Field(default_factory=list, max_length=MAX_PATTERNS)
    max_depth: int = Field(default=5, ge=0, le=50)
    max_pages: int | None = Field(default=None, ge=1, le=50_000)

    @field_validator("start_urls")
    @classmethod
    def _checked_start_urls(cls, values: list[str]) -> list[str]:
        return [checked_url(value) for value in values]

    @field_validator("path_prefix")
    @classmethod
    def _prefix_is_a_path(cls, value: str) -> str:
        if value and (not value.startswith("/") or any(char.isspace() for char in value) or "?" in value):
            raise ValueError("Give a path that starts with /, such as /docs/.")
        return value

    @field_validator("include", "exclude")
    @classmethod
    def _globs(cls, values: list[str]) -> list[str]:
        return [_checked_glob(value.strip()) for value in values]


def scope_of(source: Source) -> Scope:
    config = source.config
    starts = [config["url"], *config.get("start_urls", [])]
    limit = min(
        config.get("max_pages") or settings.CRAWL_MAX_PAGES_PER_SOURCE, settings.CRAWL_MAX_PAGES_PER_SOURCE
    )
    return Scope(
        start_urls=tuple(url for url in (canonical_url(start) for start in starts) if url),
        include_subdomains=bool(config.get("include_subdomains")),
        path_prefix=config.get("path_prefix", ""),
        include=tuple(config.get("include", [])),
        exclude=tuple(config.get("exclude", [])),
        max_depth=int(config.get("max_depth", 5)),
        max_pages=limit,
    )


class SiteKind(FetchedKind):
    name = "site"
    label = "Website (links)"
    icon = "globe"
    config_model = SiteConfig
    add_label = None  # not in the "Add source" dialog yet: the API only (issue #53)
    add_help = "A whole site, walked by its links from a start page, within the scope you set."
    form_fields = ("url", "max_pages", "keep_short_pages")

    def expand(self, *, source: Source) -> Expansion:
        """The start URLs, then every page known from an earlier walk that is still in scope: fetched again
        (conditionally) while the walk finds new ones. A walk is no evidence that a page left the site yet."""
        scope = scope_of(source)
        depths = _site_state(source).get("depths", {})
        urls = list(scope.start_urls)
        known = Document.objects.filter(source_id=source.id).values_list("url", flat=True)
        urls += [
            url for url in known if url not in urls and refusal(scope, url, depth=depths.get(url, 0)) is None
        ]
        state = {**source.state, "site": {"depths": {url: depths.get(url, 0) for url in urls}, "refused": {}}}
        Source.objects.filter(id=source.id).update(state=state)
        source.state = state
        return Expansion(urls[: scope.max_pages])

    def follow_links(self, *, source: Source, document: Document, page: FetchedPage) -> list[int]:
        """Add the links of a crawled page that are within scope, new, and within the caps as documents of
        the source; returns their ids, for the caller to queue."""
        if not page.is_html:
            return []
        found = page_links(page.html, page.final_url, robots_header=page.headers.get("x-robots-tag", ""))
        if not found.links:
            return []
        scope = scope_of(source)
        with transaction.atomic():
            # One page's links at a time per source: depths, caps and counts are read and written whole.
            locked = Source.objects.select_for_update().get(id=source.id)
            site = _site_state(locked)
            depths: dict[str, int] = site.setdefault("depths", {})
            refused: dict[str, int] = site.setdefault("refused", {})
            depth = depths.get(canonical_url(document.url) or document.url, 0) + 1
            known = set(Document.objects.filter(source_id=source.id).values_list("url", flat=True))
            queries: dict[str, set[str]] = {}
            for url in known:
                queries.setdefault(path_key(url), set()).add(url.partition("?")[2])
            new_urls: list[str] = []
            for link in found.links:
                if link in known or link in new_urls:
                    continue
                reason = (
                    refusal(scope, link, depth=depth)
                    or query_variant_refusal(scope, link, queries.get(path_key(link), set()))
                    or page_cap_refusal(scope, len(known) + len(new_urls))
                )
                if reason:
                    refused[reason] = refused.get(reason, 0) + 1
                    continue
                new_urls.append(link)
                queries.setdefault(path_key(link), set()).add(link.partition("?")[2])
            admitted = admit_pages(source=locked, new_urls=new_urls, refetch=0).new_urls
            if len(admitted) < len(new_urls):
                refused["quota"] = refused.get("quota", 0) + len(new_urls) - len(admitted)
            created = Document.objects.bulk_create(
                [
                    Document(workspace_id=source.workspace_id, source_id=source.id, url=url, title=url)
                    for url in admitted
                ]
            )
            depths.update({url: depth for url in admitted})
            Source.objects.filter(id=source.id).update(state={**locked.state, "site": site})
        return [document.id for document in created]


def _site_state(source: Source) -> dict[str, Any]:
    return dict((source.state or {}).get("site") or {})
