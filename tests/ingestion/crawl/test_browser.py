"""The headless-browser strategy: Debian's Chromium renders script-built pages, and every request it makes
goes through the address checks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ingestion.crawl.base import StrategyUnavailable
from ingestion.crawl.browser import BrowserStrategy
from ingestion.crawl.extract import DroppedPage, extract_page
from ingestion.crawl.fetch import BlockedAddressError, FetchPolicy, PermanentFetchError
from ingestion.crawl.strategies import fetch_and_extract
from tests.ingestion.crawl.servers import LocalServer, Reply, redirect, serving, tcp_attempts

pytestmark = pytest.mark.browser

ARTICLE = {
    "title": "Zebra migration",
    "text": "Every year more than a million wildebeest and two hundred thousand zebras cross the Serengeti "
    "and the Masai Mara, following the rains across nearly three thousand kilometres. " * 4,
}
JS_PAGE = """<!doctype html><html lang="en"><head><title>Loading…</title></head><body>
<div id="app"></div>
<noscript>You need to enable JavaScript to run this app.</noscript>
<script>
fetch('/api/article.json').then(r => r.json()).then(a => {
  document.title = a.title;
  document.getElementById('app').innerHTML =
    '<article><h1>' + a.title + '</h1><p>' + a.text + '</p></article>';
});
</script></body></html>"""
PROBING_PAGE = """<!doctype html><html><head><title>Probe</title></head><body>
<p id="out">waiting</p>
<iframe src="http://10.0.0.1/admin"></iframe>
<script>
Promise.allSettled([
  fetch('http://169.254.169.254/latest/meta-data/'),
  fetch('http://10.0.0.1/internal'),
  fetch('http://[::ffff:127.0.0.2]/'),
]).then(results => { document.getElementById('out').textContent = results.map(r => r.status).join(','); });
</script></body></html>"""


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserStrategy]:
    with BrowserStrategy(settle_ms=1000) as strategy:
        yield strategy


@pytest.fixture(scope="module")
def js_site() -> Iterator[LocalServer]:
    routes = {
        "/": Reply(200, JS_PAGE),
        "/api/article.json": Reply(200, json.dumps(ARTICLE), content_type="application/json"),
        "/probe": Reply(200, PROBING_PAGE),
        "/moved": redirect("/"),
        "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
        "/gone": Reply(410, "gone"),
    }
    with serving(routes) as server:
        yield server


def test_a_script_built_page_is_rendered_with_its_real_text(
    browser: BrowserStrategy, js_site: LocalServer, local_policy: FetchPolicy
) -> None:
    page = browser.fetch_page(js_site.url("/"), local_policy)
    assert page.strategy == "browser"
    extracted = extract_page(page.html, page.final_url)
    assert extracted.title == "Zebra migration"
    assert "two hundred thousand zebras cross the Serengeti" in extracted.text
    assert "/api/article.json" in js_site.paths_requested()


def test_the_same_page_over_plain_http_needs_javascript(
    js_site: LocalServer, local_policy: FetchPolicy
) -> None:
    with pytest.raises(DroppedPage) as caught:
        fetch_and_extract(js_site.url("/"), local_policy, order=["http"])
    assert caught.value.reason == "needs_javascript"


def test_the_registry_falls_back_from_http_to_the_browser(
    browser: BrowserStrategy, js_site: LocalServer, local_policy: FetchPolicy
) -> None:
    crawled = fetch_and_extract(js_site.url("/"), local_policy, strategies={"browser": browser})
    assert crawled.page.strategy == "browser"
    assert crawled.extracted is not None
    assert "zebras" in crawled.extracted.text


def test_redirects_are_followed_hop_by_hop(
    browser: BrowserStrategy, js_site: LocalServer, local_policy: FetchPolicy
) -> None:
    page = browser.fetch_page(js_site.url("/moved"), local_policy)
    assert page.final_url == js_site.url("/")


def test_requests_a_page_makes_to_private_addresses_are_refused(
    browser: BrowserStrategy,
    js_site: LocalServer,
    local_policy: FetchPolicy,
    connection_attempts: list[object],
) -> None:
    page = browser.fetch_page(js_site.url("/probe"), local_policy)
    assert set(page.blocked_requests) >= {
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/internal",
        "http://10.0.0.1/admin",
        "http://[::ffff:7f00:2]/",  # Chromium's spelling of [::ffff:127.0.0.2]
    }
    assert "rejected,rejected,rejected" in str(page.html)
    assert {a[0] for a in tcp_attempts(connection_attempts)} == {"127.0.0.1"}


def test_a_redirect_to_the_metadata_service_is_refused(
    browser: BrowserStrategy, js_site: LocalServer, local_policy: FetchPolicy
) -> None:
    with pytest.raises(BlockedAddressError, match="metadata"):
        browser.fetch_page(js_site.url("/to-metadata"), local_policy)


def test_a_private_page_is_refused_under_the_default_policy(
    browser: BrowserStrategy, js_site: LocalServer
) -> None:
    before = len(js_site.requests)
    with pytest.raises(BlockedAddressError, match="private network"):
        browser.fetch_page(js_site.url("/"), FetchPolicy())
    assert len(js_site.requests) == before


def test_the_pages_own_http_error_is_classified(
    browser: BrowserStrategy, js_site: LocalServer, local_policy: FetchPolicy
) -> None:
    with pytest.raises(PermanentFetchError) as caught:
        browser.fetch_page(js_site.url("/gone"), local_policy)
    assert caught.value.status == 410


def test_requests_that_escape_the_router_reach_nothing(
    browser: BrowserStrategy, js_site: LocalServer
) -> None:
    # A context without our route handler: Chromium's own network path must lead nowhere, loopback included.
    from playwright.sync_api import Error as PlaywrightError

    before = len(js_site.requests)
    context = browser._browser.new_context()  # type: ignore[union-attr]
    try:
        with pytest.raises(PlaywrightError, match="ERR_PROXY_CONNECTION_FAILED"):
            context.new_page().goto(js_site.url("/"), timeout=5000)
    finally:
        context.close()
    assert len(js_site.requests) == before


def test_a_missing_chromium_makes_the_strategy_unavailable(local_policy: FetchPolicy) -> None:
    with pytest.raises(StrategyUnavailable, match="no Chromium"):
        BrowserStrategy(executable_path="/nonexistent/chromium").fetch_page(
            "http://127.0.0.1:9/", local_policy
        )
