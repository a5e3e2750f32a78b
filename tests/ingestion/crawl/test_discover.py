"""Discovering a site's pages from its domain."""

from __future__ import annotations

from ingestion.crawl.discover import COMMON_PATHS, discover
from ingestion.crawl.fetch import FetchPolicy
from tests.ingestion.conftest import flask_page_paths, flask_url
from tests.ingestion.crawl.servers import LocalServer, Reply, redirect, serving


def _page(title: str) -> Reply:
    return Reply(200, f"<html><head><title>{title}</title></head><body><p>{title}</p></body></html>")


def test_the_flask_site_is_discovered_page_by_page_once(
    flask_site: LocalServer, local_policy: FetchPolicy
) -> None:
    pages = discover(flask_site.url("/"), local_policy)
    assert sorted(p.url for p in pages) == sorted(flask_url(flask_site, p) for p in flask_page_paths())
    assert pages[0].url == flask_site.url("/")
    assert pages[0].title == "Welcome to Flask — Flask Documentation (2.2.x)"
    assert pages[0].found_by == "home"
    assert {p.found_by for p in pages[1:]} == {"sitemap"}


def test_discovery_respects_max_pages(flask_site: LocalServer, local_policy: FetchPolicy) -> None:
    assert len(discover(flask_site.url("/"), local_policy, max_pages=12)) == 12


def test_common_paths_are_kept_only_when_they_are_real_html_pages(local_policy: FetchPolicy) -> None:
    routes = {
        "/": _page("Acme"),
        "/robots.txt": Reply(200, "User-agent: *\nDisallow: /contact\n", content_type="text/plain"),
        "/about": _page("About Acme"),
        "/features": redirect("/features/"),
        "/features/": _page("Features"),
        "/faq": Reply(200, '{"faq": []}', content_type="application/json"),
        "/help": _page("Page not found"),  # a soft 404
        "/support": redirect("http://localhost:9/support"),  # another host
        "/docs": Reply(500, "down"),
        "/contact": _page("Contact"),
    }
    with serving(routes) as server:
        pages = discover(server.url("/"), local_policy)
        assert [(p.url, p.title, p.found_by) for p in pages] == [
            (server.url("/"), "Acme", "home"),
            (server.url("/about"), "About Acme", "common_path"),
            (server.url("/features/"), "Features", "common_path"),
        ]
        assert "/contact" not in server.paths_requested()  # robots.txt disallows it
        assert {f"/{path}" for path in COMMON_PATHS} - {"/contact"} <= set(server.paths_requested())


def test_a_domain_without_scheme_means_https() -> None:
    from ingestion.crawl.urls import site_root

    assert site_root("Example.com") == "https://example.com/"
    assert site_root("http://127.0.0.1:8000/docs/x") == "http://127.0.0.1:8000/"
