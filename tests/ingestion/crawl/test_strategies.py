"""Choosing crawl strategies by name, lazily, and handing over when one can't do the job."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ingestion.crawl.base import StrategyUnavailable
from ingestion.crawl.browser import BrowserStrategy
from ingestion.crawl.extract import DroppedPage
from ingestion.crawl.fetch import FetchPolicy, PermanentFetchError
from ingestion.crawl.http import HttpStrategy
from ingestion.crawl.strategies import DEFAULT_ORDER, fetch_and_extract, strategy_class
from tests.ingestion.crawl.servers import FLASK_DOCS, REPO_ROOT, Reply, serving


def test_strategies_are_found_by_name_in_order_of_preference() -> None:
    assert DEFAULT_ORDER == ("http", "browser")
    assert strategy_class("http") is HttpStrategy
    assert strategy_class("browser") is BrowserStrategy
    with pytest.raises(ValueError, match="unknown crawl strategy"):
        strategy_class("carrier-pigeon")


def test_the_registry_imports_no_browser_code_until_asked() -> None:
    code = (
        "import sys, ingestion.crawl.strategies; "
        "print('playwright' in sys.modules, 'ingestion.crawl.browser' in sys.modules)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert output.stdout.split() == ["False", "False"]


def test_a_plain_page_is_crawled_over_http(local_policy: FetchPolicy) -> None:
    with serving(root=FLASK_DOCS) as server:
        crawled = fetch_and_extract(server.url("/tutorial/views.html"), local_policy)
    assert crawled.page.strategy == "http"
    assert crawled.extracted is not None
    assert crawled.extracted.title == "Blueprints and Views"


def test_an_http_error_is_not_retried_in_the_browser(local_policy: FetchPolicy) -> None:
    unavailable = {"browser": BrowserStrategy(executable_path="/nonexistent/chromium")}
    with serving({}) as server, pytest.raises(PermanentFetchError) as caught:
        fetch_and_extract(server.url("/missing"), local_policy, strategies=unavailable)
    assert caught.value.status == 404


def test_without_a_browser_a_script_page_is_dropped_with_the_reason(local_policy: FetchPolicy) -> None:
    shell = (
        "<html><head><title>App</title></head>"
        "<body><div id='root'></div><script src='/app.js'></script></body></html>"
    )
    unavailable = {"browser": BrowserStrategy(executable_path="/nonexistent/chromium")}
    with serving({"/": Reply(200, shell)}) as server, pytest.raises(DroppedPage) as caught:
        fetch_and_extract(server.url("/"), local_policy, strategies=unavailable)
    assert caught.value.reason == "needs_javascript"


def test_non_html_bodies_are_returned_unextracted(local_policy: FetchPolicy) -> None:
    with serving({"/doc.pdf": Reply(200, b"%PDF-1.7 ...", content_type="application/pdf")}) as server:
        crawled = fetch_and_extract(server.url("/doc.pdf"), local_policy)
    assert crawled.extracted is None
    assert crawled.page.content_type == "application/pdf"


class RecordingBrowser:
    """A stand-in for the browser strategy (a plug-in of the registry): records the pages handed to it."""

    name = "browser"

    def __init__(self) -> None:
        self.urls: list[str] = []

    def fetch_page(self, url, policy, *, headers=None):  # type: ignore[no-untyped-def]
        self.urls.append(url)
        raise StrategyUnavailable("recording only")

    def close(self) -> None:
        pass


def test_short_and_empty_pages_are_not_sent_to_the_browser(local_policy: FetchPolicy) -> None:
    note = (
        "<html><head><title>Release 1.2</title></head><body><article><h1>Release 1.2</h1><p>Fixed the "
        "timeout of uploads larger than one gigabyte on slow links.</p></article></body></html>"
    )
    stub = "<html><head><title>Index</title></head><body><ul><li>one</li><li>two</li></ul></body></html>"
    browser = RecordingBrowser()
    routes = {"/note": Reply(200, note), "/stub": Reply(200, stub), "/empty": Reply(200, "<html></html>")}
    with serving(routes) as server:
        kept = fetch_and_extract(server.url("/note"), local_policy, strategies={"browser": browser})
        for path in ("/stub", "/empty"):
            with pytest.raises(DroppedPage) as caught:
                fetch_and_extract(server.url(path), local_policy, strategies={"browser": browser})
            assert caught.value.reason in ("too_short", "empty")
    assert kept.extracted is not None and "Fixed the timeout" in kept.extracted.text
    assert browser.urls == []


def test_a_page_whose_markup_says_scripts_build_it_goes_to_the_browser(local_policy: FetchPolicy) -> None:
    nav = "".join(f"<li><a href='/s/{i}'>Section {i}</a></li>" for i in range(60))
    body = f"<nav><ul>{nav}</ul></nav><div id='root'></div>"
    shell = f"<html><head><title>App</title></head><body>{body}</body></html>"
    browser = RecordingBrowser()
    with serving({"/": Reply(200, shell)}) as server, pytest.raises(DroppedPage) as caught:
        fetch_and_extract(server.url("/"), local_policy, strategies={"browser": browser})
    assert caught.value.reason == "needs_javascript"
    assert browser.urls == [server.url("/")]


def test_a_sites_search_page_is_not_sent_to_the_browser(local_policy: FetchPolicy) -> None:
    # Sphinx's search.html: the one Chromium launch of a Flask docs crawl, for a page with nothing to index.
    browser = RecordingBrowser()
    with serving(root=FLASK_DOCS) as server, pytest.raises(DroppedPage) as caught:
        fetch_and_extract(server.url("/search.html"), local_policy, strategies={"browser": browser})
    assert caught.value.reason == "search_page"
    assert browser.urls == []
