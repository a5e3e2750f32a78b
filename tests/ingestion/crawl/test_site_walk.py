"""A site walked by its links (issue #53): a generated site with no sitemap, served on 127.0.0.1 and crawled
in this process (Celery eager) through the same page jobs, backlog and waves as a sitemap's pages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingestion import lifecycle
from ingestion.kinds.config import KindError
from ingestion.kinds.registry import validate_config
from sources.models import Document, Source, Status
from tests.factories import wait_for
from tests.ingestion.crawl.servers import LocalServer, Reply, redirect, serving
from tests.ingestion.test_pages import add_source, finished

pytestmark = pytest.mark.django_db(transaction=True)


def page(word: str, links: list[str], head: str = "") -> str:
    paragraphs = "".join(
        f"<p>The {word} guide, part {i}: where the {word} lives, what it eats, and how long a {word} sleeps "
        "each day; a paragraph long enough to be kept by the extractor.</p>"
        for i in range(3)
    )
    nav = "".join(links)
    return (
        f"<html><head><title>{word}</title>{head}</head><body><nav>{nav}</nav>"
        f"<main><article><h1>{word}</h1>{paragraphs}</article></main></body></html>"
    )


def a(href: str, rel: str = "") -> str:
    return f'<a href="{href}"{f" rel={rel!r}" if rel else ""}>{href}</a>'


# depth: / 0, /docs 1, /docs/a /docs/deep1 2, /docs/deep2 3, /docs/deep3 4 (beyond max_depth 3).
SITE = {
    "/": page(
        "home",
        [
            a("/docs/"),
            a("docs/index.html"),
            a("/docs/a?utm_source=home#top"),
            a("/blog/post"),
            a("https://elsewhere.example/page"),
            a("/private", rel="nofollow"),
            a("mailto:someone@example.com"),
        ],
    ),
    "/docs": page("docs", [a("a"), a("/docs/deep1"), a("/")]),
    "/docs/a": page("alpha", [a("/docs/b")]),
    "/docs/b": page("bravo", []),
    "/docs/deep1": page("deepone", [a("/docs/deep2")]),
    "/docs/deep2": page("deeptwo", [a("/docs/deep3")]),
    "/docs/deep3": page("deepthree", []),
    "/blog/post": page("blog", []),
    "/private": page("private", []),
}


@pytest.fixture
def site() -> Iterator[LocalServer]:
    routes: dict[str, Reply] = {path: Reply(200, html) for path, html in SITE.items()}
    # As servers do: the directory's address without its slash redirects to it, so relative links resolve
    # against /docs/ (the walk keeps /docs, one spelling, and fetches through the redirect).
    routes["/docs/"] = routes.pop("/docs")
    routes["/docs"] = redirect("/docs/", 301)
    with serving(routes) as server:
        yield server


def walk(workspace, agent, server: LocalServer, **options) -> Source:
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="site",
        title="",
        payload={"url": server.url("/"), **options},
    )
    return Source.unscoped.get(id=source.id)


def crawled_paths(source: Source, server: LocalServer) -> set[str]:
    urls = Document.unscoped.filter(source_id=source.id).values_list("url", flat=True)
    return {url.removeprefix(server.url("")) or "/" for url in urls}


def test_the_walk_finds_linked_pages_within_scope_once_each(eager, site, workspace, agent):
    source = walk(workspace, agent, site, exclude=["/blog/*"], max_depth=3)
    assert crawled_paths(source, site) == {"/", "/docs", "/docs/a", "/docs/b", "/docs/deep1", "/docs/deep2"}
    assert source.status == Status.DONE, (source.error, source.error_detail)
    assert set(Document.unscoped.filter(source_id=source.id).values_list("status", flat=True)) == {
        Status.DONE
    }
    requested = set(site.paths_requested())
    assert not requested & {"/blog/post", "/private", "/docs/deep3"}
    refused = source.state["site"]["refused"]
    assert refused["excluded"] == 1 and refused["out_of_scope"] == 1 and refused["too_deep"] == 1


def test_max_pages_stops_the_walk(eager, site, workspace, agent):
    source = walk(workspace, agent, site, max_pages=3)
    assert len(crawled_paths(source, site)) == 3
    assert source.state["site"]["refused"]["too_many_pages"] >= 1


def test_a_path_prefix_and_include_patterns_keep_the_walk_in_its_section(eager, site, workspace, agent):
    source = walk(workspace, agent, site, path_prefix="/docs/", include=["/docs/a*", "/docs/b*"])
    # The start page is where the walk begins whatever the scope; what it links to must be in scope.
    assert crawled_paths(source, site) == {"/", "/docs/a", "/docs/b"}


def test_the_scope_is_validated_with_field_errors():
    with pytest.raises(KindError) as caught:
        validate_config(
            "site",
            {
                "url": "http://127.0.0.1:9/",
                "path_prefix": "docs",
                "exclude": ["blog/*"],
                "max_depth": -1,
                "start_urls": ["not a url"],
            },
        )
    assert set(caught.value.errors) == {"path_prefix", "exclude", "max_depth", "start_urls"}
    config = validate_config("site", {"url": "http://127.0.0.1:9/", "include": [" /docs/* "]})
    assert config.include == ["/docs/*"]


@pytest.mark.worker
def test_a_real_worker_walks_the_site_through_the_api(celery_worker, api, agent, site):
    source_id = add_source(api, agent, "site", site.url("/"), exclude=["/blog/*"], max_depth=3)
    body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["status"] == "done", body
    assert body["pages_done"] == 6, body
    assert not set(site.paths_requested()) & {"/blog/post", "/private", "/docs/deep3"}
