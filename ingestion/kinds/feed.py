"""An RSS or Atom feed: each item's page is fetched and kept."""

from __future__ import annotations

from django.conf import settings

from checked_http.errors import PermanentFetchError
from ingestion.crawl.feed import fetch_feed
from ingestion.crawl.fetch import fetch_policy
from ingestion.crawl.robots import allowed_by_robots
from ingestion.kinds.base import Expansion, FetchedKind
from ingestion.kinds.url import UrlConfig
from sources.models import Source


class FeedConfig(UrlConfig):
    pass


class FeedKind(FetchedKind):
    name = "feed"
    label = "Feed"
    icon = "rss"
    unit = ("item", "items")
    config_model = FeedConfig
    add_label = "Feed"
    add_help = "An RSS or Atom feed: each item's page is fetched and kept."

    def expand(self, *, source: Source) -> Expansion:
        url = source.config["url"]
        feed = fetch_feed(url, fetch_policy())
        listed = list(dict.fromkeys(item.url for item in feed.items if item.url))
        allowed = allowed_by_robots(fetch_policy())
        urls = [u for u in listed if allowed(u)]
        notice = ""
        if len(urls) > settings.CRAWL_MAX_PAGES_PER_SOURCE:
            kept = settings.CRAWL_MAX_PAGES_PER_SOURCE
            notice = f"The feed has {len(urls)} items; the first {kept} were kept."
            urls = urls[:kept]
        if not urls and listed:
            raise PermanentFetchError(
                "The site's robots.txt asks crawlers not to fetch any of the feed's items.",
                f"{len(listed)} items disallowed by robots.txt",
            )
        if not urls:
            raise PermanentFetchError("The feed has no items with links.", url)
        # A feed lists its latest items only: one that left it is still on the site, so it is kept and
        # fetched again, and removed only when its page is gone.
        return Expansion(urls, notice, recheck_unlisted=True, skipped_by_robots=len(listed) - len(urls))
