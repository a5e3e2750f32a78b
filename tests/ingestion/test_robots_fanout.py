"""Pages that robots.txt disallows are filtered when a source is expanded into pages: never queued, never
fetched, counted on the source ("skipped by robots.txt"), not failures, and not counted against the page cap.
Run in this process (expansion.source_expand) against a site on 127.0.0.1."""

from __future__ import annotations

import pytest

from ingestion import expansion
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope
from tests.ingestion.crawl.servers import Reply, serving

pytestmark = pytest.mark.django_db(transaction=True)

ROBOTS = "User-agent: *\nDisallow: /private/\n"


def _source(workspace, agent, kind: str, url: str) -> Source:
    with workspace_scope(workspace.id):
        return Source.objects.create(agent=agent, kind=kind, title="Site", config={"url": url})


def _urlset(server, paths: list[str]) -> Reply:
    entries = "".join(f"<url><loc>{server.url(path)}</loc></url>" for path in paths)
    body = (
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )
    return Reply(200, body, content_type="application/xml")


def test_disallowed_pages_are_not_queued_fetched_or_failed_and_do_not_count_against_the_cap(
    workspace, agent, settings
):
    settings.CRAWL_MAX_PAGES_PER_SOURCE = 3
    listed = ["/private/a.html", "/docs/1.html", "/private/b.html", "/docs/2.html", "/docs/3.html"]
    listed.append("/docs/4.html")
    with serving({"/robots.txt": Reply(200, ROBOTS, content_type="text/plain")}) as server:
        server.routes["/sitemap.xml"] = _urlset(server, listed)
        source = _source(workspace, agent, "sitemap", server.url("/sitemap.xml"))
        queued = expansion.source_expand(source=source)
        requested = server.paths_requested()
    with workspace_scope(workspace.id):
        urls = set(Document.objects.filter(id__in=queued).values_list("url", flat=True))
        assert urls == {server.url(p) for p in ["/docs/1.html", "/docs/2.html", "/docs/3.html"]}
        assert Document.objects.count() == 3  # nothing kept for the disallowed pages: no failures
        source = Source.objects.get(id=source.id)
    assert source.state["skipped_by_robots"] == 2
    assert "2 listed pages skipped by robots.txt" in source.notice
    assert source.pages_total == 3 and source.status == Status.CRAWLING
    assert not [p for p in requested if p.startswith("/private/")]


def test_a_single_disallowed_page_fails_its_source_with_the_reason(workspace, agent):
    with serving({"/robots.txt": Reply(200, ROBOTS, content_type="text/plain")}) as server:
        source = _source(workspace, agent, "url", server.url("/private/page.html"))
        assert expansion.source_expand(source=source) == []
        assert "/private/page.html" not in server.paths_requested()
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
    assert source.status == Status.FAILED
    assert "robots.txt" in source.error


def test_a_sitemap_whose_pages_are_all_disallowed_says_so(workspace, agent):
    with serving({"/robots.txt": Reply(200, ROBOTS, content_type="text/plain")}) as server:
        server.routes["/sitemap.xml"] = _urlset(server, ["/private/a.html", "/private/b.html"])
        source = _source(workspace, agent, "sitemap", server.url("/sitemap.xml"))
        assert expansion.source_expand(source=source) == []
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
    assert source.status == Status.FAILED and "robots.txt" in source.error


def test_a_feeds_disallowed_items_are_skipped(workspace, agent):
    items = "".join(
        f"<item><title>Post {i}</title><link>{{base}}{path}</link></item>"
        for i, path in enumerate(["/posts/1.html", "/private/2.html"])
    )
    with serving({"/robots.txt": Reply(200, ROBOTS, content_type="text/plain")}) as server:
        channel = f"<channel><title>Blog</title>{items.format(base=server.url(''))}</channel>"
        feed = f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0">{channel}</rss>'
        server.routes["/feed.xml"] = Reply(200, feed, content_type="application/rss+xml")
        source = _source(workspace, agent, "feed", server.url("/feed.xml"))
        queued = expansion.source_expand(source=source)
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
        urls = list(Document.objects.filter(id__in=queued).values_list("url", flat=True))
    assert urls == [server.url("/posts/1.html")], (source.error, source.error_detail)
    assert source.state["skipped_by_robots"] == 1
