"""A whole site: its root (the sitemap is found through robots.txt), a sitemap, or a sitemap index."""

from __future__ import annotations

from django.conf import settings
from pydantic import Field

from checked_http.errors import PermanentFetchError
from ingestion.crawl.fetch import fetch_policy
from ingestion.crawl.robots import allowed_by_robots
from ingestion.crawl.sitemap import fetch_sitemap
from ingestion.kinds.base import Expansion, FetchedKind
from ingestion.kinds.url import UrlConfig
from sources.models import Source


class SitemapConfig(UrlConfig):
    max_pages: int | None = Field(default=None, ge=1, le=50_000)


class SitemapKind(FetchedKind):
    name = "sitemap"
    label = "Website"
    icon = "globe"
    config_model = SitemapConfig
    add_label = "Website"
    add_help = (
        "A whole site: give its address (the sitemap is found through robots.txt) or the sitemap itself. "
        "Every listed page becomes searchable."
    )
    form_fields = ("url", "max_pages", "keep_short_pages")

    def expand(self, *, source: Source) -> Expansion:
        limit = min(
            source.config.get("max_pages") or settings.CRAWL_MAX_PAGES_PER_SOURCE,
            settings.CRAWL_MAX_PAGES_PER_SOURCE,
        )
        policy = fetch_policy()
        result = fetch_sitemap(
            source.config["url"], policy, max_pages=limit, allowed=allowed_by_robots(policy)
        )
        notice = ""
        if result.truncated:
            notice = (
                f"This site lists more pages than the limit of {len(result.urls)}; "
                f"{'at least ' if result.left_out else ''}{result.left_out or 'some'} were left out."
            )
        if not result.urls and result.disallowed:
            raise PermanentFetchError(
                "The site's robots.txt asks crawlers not to fetch any of the pages its sitemap lists.",
                f"{result.disallowed} listed pages disallowed by robots.txt",
            )
        if not result.urls:
            raise PermanentFetchError("The sitemap lists no pages.", "; ".join(result.errors))
        # Only a whole listing is evidence that a page left the site: no child sitemap failed, none cut.
        complete = not result.truncated and not result.errors
        return Expansion(
            result.urls,
            notice,
            lastmod=result.lastmod,
            complete=complete,
            skipped_by_robots=result.disallowed,
        )
