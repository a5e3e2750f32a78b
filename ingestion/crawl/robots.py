"""robots.txt, fetched through the safe fetch and kept per site for a while in this process.

Follows RFC 9309: a missing robots.txt (any 4xx) allows everything; a server error or an unreachable site is
not a licence to crawl, so it raises TransientFetchError and the caller retries later.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from protego import Protego

from ingestion.crawl.fetch import BOT_NAME, FetchError, FetchPolicy, PermanentFetchError, fetch
from ingestion.crawl.urls import site_root

ROBOTS_MAX_BYTES = 512 * 1024  # Google reads the first 500 KiB and ignores the rest
CACHE_SECONDS = 3600.0


@dataclass(frozen=True)
class RobotsRules:
    site: str
    parser: Protego | None  # None: no robots.txt, everything allowed

    def allows(self, url: str, user_agent: str = BOT_NAME) -> bool:
        return True if self.parser is None else bool(self.parser.can_fetch(url, user_agent))

    @property
    def sitemaps(self) -> list[str]:
        return [] if self.parser is None else list(self.parser.sitemaps)

    def crawl_delay(self, user_agent: str = BOT_NAME) -> float | None:
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent)
        return float(delay) if delay is not None else None


_cache: dict[tuple[str, bool, tuple[str, ...]], tuple[float, RobotsRules]] = {}
_cache_lock = threading.Lock()


def get_robots(url: str, policy: FetchPolicy) -> RobotsRules:
    """The robots.txt rules of the site `url` is on."""
    root = site_root(url)
    key = (root, policy.allow_private_networks, policy.allowed_networks)
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(key)
        if cached and cached[0] > now:
            return cached[1]
    rules = _fetch_rules(root, policy)
    with _cache_lock:
        _cache[key] = (now + CACHE_SECONDS, rules)
    return rules


def robots_allows(url: str, policy: FetchPolicy, *, user_agent: str = BOT_NAME) -> bool:
    return get_robots(url, policy).allows(url, user_agent)


def allowed_by_robots(policy: FetchPolicy, *, user_agent: str = BOT_NAME) -> Callable[[str], bool]:
    """A filter for listings (sitemaps, feeds): False for a URL the site's robots.txt disallows. A robots.txt
    that can't be read now lets the URL through; the page's own robots check then decides."""

    def allowed(url: str) -> bool:
        try:
            return robots_allows(url, policy, user_agent=user_agent)
        except FetchError:
            return True

    return allowed


def crawl_delay(url: str, policy: FetchPolicy, *, cap: float, user_agent: str = BOT_NAME) -> float:
    """The Crawl-delay the site asks of us, in seconds, at most `cap` (a site asking for an hour between
    requests would never be crawled). 0 when it asks none or robots.txt can't be read now (the page's own
    robots check then decides what happens)."""
    try:
        delay = get_robots(url, policy).crawl_delay(user_agent)
    except FetchError:
        return 0.0
    return min(max(delay or 0.0, 0.0), cap)


def clear_robots_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _fetch_rules(root: str, policy: FetchPolicy) -> RobotsRules:
    robots_policy = dataclasses.replace(policy, max_bytes=ROBOTS_MAX_BYTES, same_host_redirects_only=False)
    try:
        result = fetch(root + "robots.txt", robots_policy, headers={"Accept": "text/plain"})
    except PermanentFetchError as exc:
        if exc.status is not None and 400 <= exc.status < 500:
            return RobotsRules(root, None)
        raise
    return RobotsRules(root, Protego.parse(result.text()))
