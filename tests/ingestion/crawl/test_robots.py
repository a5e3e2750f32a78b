"""robots.txt through the safe fetch, cached per site."""

from __future__ import annotations

import pytest

from ingestion.crawl.fetch import BlockedAddressError, FetchPolicy, TransientFetchError
from ingestion.crawl.robots import get_robots, robots_allows
from tests.ingestion.crawl.servers import SITEMAP_SAMPLES, Reply, serving

ROBOTS = """User-agent: *
Disallow: /private/

User-agent: GroundedBot
Disallow: /no-bots/
Crawl-delay: 2

Sitemap: http://127.0.0.1/sitemap.xml
"""


def test_rules_for_our_bot_are_applied_and_fetched_once_per_site(local_policy: FetchPolicy) -> None:
    with serving({"/robots.txt": Reply(200, ROBOTS, content_type="text/plain")}) as server:
        assert robots_allows(server.url("/docs/page"), local_policy)
        assert not robots_allows(server.url("/no-bots/page"), local_policy)
        # Our own group replaces the * group, as RFC 9309 says.
        assert robots_allows(server.url("/private/page"), local_policy)
        rules = get_robots(server.url("/anything"), local_policy)
        assert rules.crawl_delay() == 2
        assert rules.sitemaps == ["http://127.0.0.1/sitemap.xml"]
        assert server.paths_requested() == ["/robots.txt"]


def test_a_real_robots_file_with_wildcards_and_groups(local_policy: FetchPolicy) -> None:
    body = (SITEMAP_SAMPLES / "advertools/robots.txt").read_bytes()
    with serving({"/robots.txt": Reply(200, body, content_type="text/plain")}) as server:
        rules = get_robots(server.url("/"), local_policy)
        assert rules.sitemaps == ["https://advertools.readthedocs.io/sitemap.xml"]
        assert rules.allows(server.url("/dont_crawl"))
        assert not rules.allows(server.url("/dont_crawl"), "Googlebot")


@pytest.mark.parametrize("status", [404, 410, 401, 403])
def test_a_missing_robots_file_allows_everything(status: int, local_policy: FetchPolicy) -> None:
    with serving({"/robots.txt": Reply(status, "no")}) as server:
        assert robots_allows(server.url("/anything"), local_policy)


def test_a_failing_robots_file_means_try_later(local_policy: FetchPolicy) -> None:
    with serving({"/robots.txt": Reply(503, "down")}) as server, pytest.raises(TransientFetchError):
        robots_allows(server.url("/page"), local_policy)


def test_robots_on_a_private_address_is_never_fetched(connection_attempts: list[object]) -> None:
    with pytest.raises(BlockedAddressError):
        robots_allows("http://10.0.0.5/page", FetchPolicy())
    assert connection_attempts == []
