"""Pages left out on purpose (too little text) are skipped, not failed: with their reason and the size of
their text, in the source's counts apart from failures. The admin can index one anyway, and a re-sync keeps
that decision; a source's "keep short pages" option keeps them all. Crawled in this process (Celery eager)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import timezone

from ingestion import lifecycle
from retrieval.services import SearchParams, search_passages
from sources.models import Chunk, Document, Source
from tests.ingestion.crawl.servers import LocalServer, Reply, serving

pytestmark = pytest.mark.django_db(transaction=True)


def article(word: str) -> str:
    paragraphs = "".join(
        f"<p>The {word} guide, part {i}: where the {word} lives, what it eats, and how long a {word} sleeps "
        "each day; a paragraph long enough to be kept by the extractor.</p>"
        for i in range(3)
    )
    body = f"<main><article><h1>{word}</h1>{paragraphs}</article></main>"
    return f"<html><head><title>{word}</title></head><body>{body}</body></html>"


# A title and one line: too little text to answer from, so skipped unless the admin keeps it.
SHORT = (
    "<html><head><title>Opening hours</title></head><body><main><article><h1>Opening hours</h1>"
    "<p>Quokka desk Mon-Fri 9-17</p></article></main></body></html>"
)


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serving() as server:
        publish(server, ["/guide", "/hours"])
        server.routes["/guide"] = Reply(200, article("heron"))
        server.routes["/hours"] = Reply(200, SHORT)
        yield server


def publish(server: LocalServer, paths: list[str]) -> None:
    entries = "".join(f"<url><loc>{server.url(path)}</loc></url>" for path in paths)
    body = (
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )
    server.routes["/sitemap.xml"] = Reply(200, body, content_type="application/xml")


def add_site(workspace, agent, server: LocalServer, **options) -> Source:
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": server.url("/sitemap.xml"), **options},
    )
    return Source.unscoped.get(id=source.id)


def page(source: Source, server: LocalServer, path: str) -> Document:
    return Document.unscoped.get(source_id=source.id, url=server.url(path))


def scheduled_sync(source: Source) -> Source:
    Source.unscoped.filter(id=source.id).update(next_sync_at=timezone.now() - timezone.timedelta(seconds=1))
    assert [s.id for s in lifecycle.sync_due_sources()] == [source.id]
    return Source.unscoped.get(id=source.id)


def found(workspace, word: str) -> bool:
    passages = search_passages(
        workspace_id=workspace.id, query=word, params=SearchParams(mode="keyword", top_k=10)
    )
    return any(word in p.text.lower() for p in passages)


def test_a_short_page_is_skipped_with_its_reason_and_size_and_not_counted_as_failed(
    eager, site, workspace, agent
):
    site.routes["/gone"] = Reply(404, "<html><title>Not found</title></html>")
    publish(site, ["/guide", "/hours", "/gone"])
    source = add_site(workspace, agent, site)
    assert source.status == "done" and source.error == "", source.error
    assert (source.pages_total, source.pages_done, source.pages_skipped, source.pages_failed) == (3, 1, 1, 1)
    assert source.pages_skipped_by_reason == {"too_short": 1} and source.pages_left == 0
    hours = page(source, site, "/hours")
    assert hours.status == "skipped" and hours.skip_reason == "too_short" and hours.failure_class == ""
    assert "too little text" in hours.error and hours.skipped_chars == len(
        "Opening hours\nQuokka desk Mon-Fri 9-17"
    )
    assert not Chunk.unscoped.filter(document_id=hours.id).exists() and not found(workspace, "quokka")
    assert page(source, site, "/gone").status == "failed"


def test_a_source_whose_only_page_is_short_is_done_not_failed(eager, site, workspace, agent):
    source = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="url", title="", payload={"url": site.url("/hours")}
    )
    source = Source.unscoped.get(id=source.id)
    assert (source.status, source.error, source.pages_done, source.pages_skipped) == ("done", "", 0, 1)


def test_index_anyway_indexes_the_page_and_a_resync_keeps_it(eager, site, workspace, agent):
    source = add_site(workspace, agent, site)
    hours = page(source, site, "/hours")
    assert hours.status == "skipped"
    lifecycle.index_anyway(document=hours)
    hours = page(source, site, "/hours")
    assert hours.status == "done" and hours.keep_short and hours.skip_reason == ""
    assert found(workspace, "quokka")
    source = Source.unscoped.get(id=source.id)
    assert (source.status, source.pages_done, source.pages_skipped) == ("done", 2, 0)
    fetched = site.paths_requested().count("/hours")
    for _ in range(2):  # fetched again each time (no <lastmod>): still kept
        source = scheduled_sync(source)
    assert site.paths_requested().count("/hours") == fetched + 2
    hours = page(source, site, "/hours")
    assert hours.status == "done" and hours.keep_short and found(workspace, "quokka")
    assert (source.pages_done, source.pages_skipped) == (2, 0)
    # Changed, and still short: indexed again, not skipped.
    site.routes["/hours"] = Reply(200, SHORT.replace("9-17", "8-16"))
    source = scheduled_sync(source)
    assert page(source, site, "/hours").status == "done" and "8-16" in page(source, site, "/hours").text


def test_only_a_skipped_page_can_be_indexed_anyway(eager, site, workspace, agent):
    from ingestion.kinds.config import KindError

    source = add_site(workspace, agent, site)
    with pytest.raises(KindError) as refused:
        lifecycle.index_anyway(document=page(source, site, "/guide"))
    assert "skipped" in refused.value.errors["document"][0]
    Source.unscoped.filter(id=source.id).update(status="crawling")
    with pytest.raises(KindError) as busy:
        lifecycle.index_anyway(document=page(source, site, "/hours"))
    assert "source" in busy.value.errors
    assert page(source, site, "/hours").status == "skipped" and not page(source, site, "/hours").keep_short


def test_a_page_that_became_short_is_skipped_and_its_passages_go(eager, site, workspace, agent):
    site.routes["/hours"] = Reply(200, article("quokka"))
    source = add_site(workspace, agent, site)
    assert page(source, site, "/hours").status == "done" and found(workspace, "quokka")
    site.routes["/hours"] = Reply(200, SHORT)
    source = scheduled_sync(source)
    hours = page(source, site, "/hours")
    assert hours.status == "skipped" and hours.text == "" and hours.content_hash == ""
    assert not Chunk.unscoped.filter(document_id=hours.id).exists() and not found(workspace, "quokka")
    assert (source.status, source.pages_done, source.pages_skipped) == ("done", 1, 1)
    # A reindex makes nothing of it: its old text went with its passages.
    assert lifecycle.source_reindex(source=source)
    assert page(source, site, "/hours").status == "skipped" and not found(workspace, "quokka")


def test_the_source_option_keeps_short_pages(eager, site, workspace, agent):
    source = add_site(workspace, agent, site, keep_short_pages=True)
    assert source.config["keep_short_pages"] is True
    assert page(source, site, "/hours").status == "done" and found(workspace, "quokka")
    assert (source.pages_done, source.pages_skipped) == (2, 0)


def test_turning_the_option_on_fetches_the_skipped_pages_again(eager, site, workspace, agent):
    source = add_site(workspace, agent, site)
    assert page(source, site, "/hours").status == "skipped"
    lifecycle.source_update(source=source, keep_short_pages=True)
    source = Source.unscoped.get(id=source.id)
    assert source.config["keep_short_pages"] is True
    assert page(source, site, "/hours").status == "done" and found(workspace, "quokka")
    assert not page(source, site, "/hours").keep_short  # the source's decision, not the page's
    assert (source.pages_done, source.pages_skipped) == (2, 0)


# A site's search page (Sphinx's search.html): a form, a notice asking for JavaScript to search, and the
# search tips, its only text of its own.
SEARCH = (
    "<html><head><title>Search</title></head><body><main>{body}"
    "<noscript>Please activate JavaScript to enable the search functionality.</noscript>"
    "<form action='' method='get'><input type='text' name='q'><input type='submit' value='search'></form>"
    "<div id='search-results'></div></main></body></html>"
)
SEARCH_TIPS = (
    "<h1>Search</h1><p>Searching for multiple words only shows results with all of the wombat words.</p>"
)


def test_index_anyway_indexes_a_search_page_with_its_text_and_a_resync_keeps_it(
    eager, site, workspace, agent
):
    site.routes["/search"] = Reply(200, SEARCH.format(body=SEARCH_TIPS))
    publish(site, ["/guide", "/search"])
    source = add_site(workspace, agent, site)
    search = page(source, site, "/search")
    assert (search.status, search.skip_reason) == ("skipped", "search_page")
    assert search.skipped_chars == len(
        "Search\nSearching for multiple words only shows results with all of the wombat words."
    )
    lifecycle.index_anyway(document=search)
    search = page(source, site, "/search")
    assert (search.status, search.keep_short, search.skip_reason) == ("done", True, "")
    assert "wombat words" in search.text and found(workspace, "wombat")
    fetched = site.paths_requested().count("/search")
    source = scheduled_sync(source)
    assert site.paths_requested().count("/search") == fetched + 1
    search = page(source, site, "/search")
    assert (search.status, search.keep_short) == ("done", True) and found(workspace, "wombat")
    assert (source.pages_done, source.pages_skipped) == (2, 0)


def test_a_search_page_with_no_text_of_its_own_is_refused_with_the_reason(eager, site, workspace, agent):
    from ingestion.kinds.config import KindError

    site.routes["/search"] = Reply(200, SEARCH.format(body=""))
    publish(site, ["/guide", "/search"])
    source = add_site(workspace, agent, site)
    search = page(source, site, "/search")
    assert (search.status, search.skip_reason, search.skipped_chars) == ("skipped", "search_page", 0)
    fetched = site.paths_requested().count("/search")
    with pytest.raises(KindError) as refused:
        lifecycle.index_anyway(document=search)
    assert "no text of its own" in refused.value.errors["document"][0]
    search = page(source, site, "/search")
    assert (search.status, search.keep_short) == ("skipped", False)
    assert site.paths_requested().count("/search") == fetched
