"""Scheduled re-syncs of generated sites, run in this process (Celery eager) so that the embedder's calls can
be counted at a real HTTP provider on 127.0.0.1: what changed is embedded again, nothing else is; pages are
removed on evidence only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import timezone

from ingestion import lifecycle
from ingestion.freshness import outcome_summary
from retrieval.services import SearchParams, search_passages
from sources import metering
from sources.models import Chunk, Document, Plan, Source
from sources.plans import assign_plan
from sources.tenancy import workspace_scope
from tests.fakes.openai_server import FakeProvider
from tests.ingestion.crawl.servers import LocalServer, Reply, serving

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = (
    "aardvark badger caribou dingo egret ferret gazelle heron ibex jackal koala lemur marmot narwhal ocelot "
    "pelican quokka raccoon salamander tapir urchin vulture walrus"
).split()


def article(word: str, edition: int = 1) -> str:
    paragraphs = "".join(
        f"<p>The {word} guide, edition {edition}, part {i}: where the {word} lives, what it eats, and how "
        f"long a {word} sleeps each day; a paragraph long enough to be kept by the extractor.</p>"
        for i in range(4)
    )
    body = f"<main><article><h1>{word}</h1>{paragraphs}</article></main>"
    return f"<html><head><title>{word}</title></head><body>{body}</body></html>"


class Site:
    """A site whose pages, sitemap and <lastmod> values a test changes between syncs."""

    def __init__(self, server: LocalServer) -> None:
        self.server = server
        self.listed: dict[str, str | None] = {}  # path -> lastmod (None: the sitemap gives none)
        self.sitemap_status = 200

    def page(self, path: str, body: str, lastmod: str | None = "2024-01-01", listed: bool = True) -> None:
        self.server.routes[path] = Reply(200, body)
        if listed:
            self.listed[path] = lastmod

    def gone(self, path: str) -> None:
        self.server.routes[path] = Reply(404, "<html><title>Not found</title></html>")

    def publish(self) -> None:
        entries = "".join(
            f"<url><loc>{self.server.url(path)}</loc>{f'<lastmod>{mod}</lastmod>' if mod else ''}</url>"
            for path, mod in self.listed.items()
        )
        body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
        self.server.routes["/sitemap.xml"] = Reply(self.sitemap_status, body, content_type="application/xml")

    def page_requests(self) -> list[str]:
        return [p for p in self.server.paths_requested() if p.startswith("/p/")]


def embedder_calls(provider: FakeProvider) -> int:
    return sum(1 for r in provider.requests if r["path"].endswith("/embeddings"))


@pytest.fixture
def site() -> Iterator[Site]:
    with serving() as server:
        yield Site(server)


def scheduled_sync(source: Source) -> Source:
    """What the beat does when the source is due."""
    Source.unscoped.filter(id=source.id).update(next_sync_at=timezone.now() - timezone.timedelta(seconds=1))
    claimed = lifecycle.sync_due_sources()
    assert [s.id for s in claimed] == [source.id]
    return Source.unscoped.get(id=source.id)


def counts(source: Source) -> dict[str, int]:
    return {k: source.last_sync[k] for k in ("added", "changed", "unchanged", "removed", "failed")}


def found(workspace, word: str) -> list[str]:
    passages = search_passages(
        workspace_id=workspace.id, query=word, params=SearchParams(mode="keyword", top_k=10)
    )
    return [p.url for p in passages if word in p.text]


def test_a_scheduled_resync_fetches_and_embeds_only_what_changed(eager, site, workspace, agent):
    for i, word in enumerate(WORDS[:20]):
        # The last four pages have no <lastmod>: they are fetched every sync, and their hash decides.
        site.page(f"/p/{i}", article(word), lastmod=None if i >= 16 else "2024-01-01")
    site.publish()
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": site.server.url("/sitemap.xml")},
    )
    source = Source.unscoped.get(id=source.id)
    assert source.status == "done" and source.pages_done == 20, (source.error, source.last_sync)
    assert counts(source) == {"added": 20, "changed": 0, "unchanged": 0, "removed": 0, "failed": 0}
    assert source.schedule == "daily" and source.next_sync_at > timezone.now() + timezone.timedelta(hours=23)
    first_calls, first_requests = embedder_calls(eager), len(site.page_requests())
    assert first_calls == 20 and first_requests == 20

    for i in (0, 1, 2):  # changed, and the sitemap says so
        site.page(f"/p/{i}", article(WORDS[i], edition=2), lastmod="2024-02-01")
    site.page("/p/20", article(WORDS[20]))
    site.page("/p/21", article(WORDS[21]))
    site.gone("/p/16")
    site.gone("/p/17")
    site.publish()
    source = scheduled_sync(source)
    assert counts(source) == {"added": 2, "changed": 3, "unchanged": 15, "removed": 0, "failed": 2}
    assert embedder_calls(eager) - first_calls == 5  # one call per page added or changed, nothing else
    # Fetched: the 3 changed and 2 new pages, and the 4 pages without <lastmod>; the 13 others not at all.
    assert sorted(site.page_requests()[first_requests:]) == sorted(
        ["/p/0", "/p/1", "/p/2", "/p/20", "/p/21", "/p/16", "/p/17", "/p/18", "/p/19"]
    )
    assert found(workspace, WORDS[16])  # one 404 is no evidence yet: still searchable

    calls = embedder_calls(eager)
    source = scheduled_sync(source)
    assert counts(source) == {"added": 0, "changed": 0, "unchanged": 20, "removed": 2, "failed": 0}
    assert embedder_calls(eager) == calls  # nothing embedded on a sync where nothing changed
    assert {p["url"] for p in source.last_sync["removed_pages"]} == {
        site.server.url("/p/16"),
        site.server.url("/p/17"),
    }
    assert all("404" in p["reason"] for p in source.last_sync["removed_pages"])
    assert not Document.unscoped.filter(source_id=source.id, url__endswith="/p/16").exists()
    assert not Chunk.unscoped.filter(source_id=source.id, metadata__url=site.server.url("/p/16")).exists()
    assert found(workspace, WORDS[16]) == [] and found(workspace, WORDS[17]) == []
    assert found(workspace, WORDS[18])  # the rest stays searchable
    assert source.pages_total == 20 and source.pages_failed == 0 and source.status == "done"


def test_server_errors_and_a_broken_listing_remove_nothing(eager, site, workspace, agent, settings):
    settings.CRAWL_RETRY_BACKOFF = [0.0]
    for i, word in enumerate(WORDS[:4]):
        site.page(f"/p/{i}", article(word), lastmod=None)
    site.publish()
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": site.server.url("/sitemap.xml")},
    )
    chunks = Chunk.unscoped.filter(source_id=source.id).count()
    for path in ("/p/0", "/p/1"):
        site.server.routes[path] = Reply(503, "down for maintenance")
    for _ in range(3):  # more syncs in a row than the evidence rule needs
        source = scheduled_sync(source)
        assert source.last_sync["removed"] == 0 and source.last_sync["failed"] == 2
    assert (
        Document.unscoped.get(source_id=source.id, url=site.server.url("/p/0")).failure_class
        == "server_error"
    )
    site.sitemap_status = 500
    site.publish()
    for _ in range(2):
        source = scheduled_sync(source)
        assert source.last_sync["removed"] == 0 and "error" in source.last_sync
    source = Source.unscoped.get(id=source.id)
    assert source.status == "done" and "couldn't read the listing" in source.notice
    assert Document.unscoped.filter(source_id=source.id).count() == 4
    assert Chunk.unscoped.filter(source_id=source.id).count() == chunks
    assert found(workspace, WORDS[0])


def test_a_page_left_out_of_two_complete_listings_is_removed(eager, site, workspace, agent):
    for i, word in enumerate(WORDS[:3]):
        site.page(f"/p/{i}", article(word))
    site.publish()
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": site.server.url("/sitemap.xml")},
    )
    del site.listed["/p/2"]  # the page is still served: only the listing's word counts
    site.publish()
    source = scheduled_sync(source)
    assert source.last_sync["removed"] == 0 and found(workspace, WORDS[2])
    source = scheduled_sync(source)
    assert source.last_sync["removed"] == 1
    assert "listings" in source.last_sync["removed_pages"][0]["reason"]
    assert found(workspace, WORDS[2]) == []


def test_a_feed_keeps_items_that_left_it_until_their_page_is_gone(eager, site, workspace, agent):
    def publish_feed(paths: list[str]) -> None:
        items = "".join(f"<item><title>{p}</title><link>{site.server.url(p)}</link></item>" for p in paths)
        body = f'<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>{items}</channel></rss>'
        site.server.routes["/feed.xml"] = Reply(200, body, content_type="application/rss+xml")

    for i, word in enumerate(WORDS[:3]):
        site.page(f"/p/{i}", article(word), listed=False)
    publish_feed(["/p/0", "/p/1"])
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="feed",
        title="",
        payload={"url": site.server.url("/feed.xml")},
    )
    publish_feed(["/p/1", "/p/2"])  # a new item; the oldest one leaves the feed
    source = scheduled_sync(source)
    assert source.last_sync["added"] == 1 and source.last_sync["removed"] == 0
    for _ in range(2):
        source = scheduled_sync(source)
        assert found(workspace, WORDS[0])  # left the feed, still on the site: kept
    site.gone("/p/0")
    scheduled_sync(source)
    source = scheduled_sync(source)
    assert source.last_sync["removed"] == 1 and found(workspace, WORDS[0]) == []


def test_crawls_do_not_follow_redirects_to_another_site(eager, site, workspace, agent):
    site.server.routes["/moved"] = Reply(
        301, "", headers={"Location": site.server.url("/p/0", host="localhost")}
    )
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="url",
        title="",
        payload={"url": site.server.url("/moved")},
    )
    document = Document.unscoped.get(source_id=source.id)
    assert document.status == "failed" and document.failure_class == "redirect"
    assert "localhost" not in "".join(site.server.paths_requested())


def test_a_paused_source_can_be_left_out_of_search_without_losing_anything(eager, site, workspace, agent):
    site.page("/p/0", article(WORDS[0]))
    site.publish()
    source = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="url", title="", payload={"url": site.server.url("/p/0")}
    )
    with workspace_scope(workspace.id):
        chunks = Chunk.objects.filter(source_id=source.id).count()
    lifecycle.source_update(source=source, paused=True)
    assert found(workspace, WORDS[0])  # paused only stops syncing
    lifecycle.source_update(source=source, hidden_while_paused=True)
    assert found(workspace, WORDS[0]) == []
    assert Chunk.unscoped.filter(source_id=source.id).count() == chunks
    lifecycle.source_update(source=source, paused=False)
    assert found(workspace, WORDS[0])


def _small_plan(workspace, **limits) -> None:
    Plan.objects.create(name="small", **limits)
    assign_plan(workspace, "small")


def crawl_pages_used(workspace) -> int:
    return metering.used(workspace_id=workspace.id, metric="crawl_pages")


def test_known_pages_held_back_by_the_daily_crawl_quota_are_said_so(eager, site, workspace, agent):
    _small_plan(workspace, max_crawl_pages_per_day=6)
    for i, word in enumerate(WORDS[:4]):
        site.page(f"/p/{i}", article(word), lastmod=None)  # no <lastmod>: every sync fetches them
    site.publish()
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="sitemap",
        title="",
        payload={"url": site.server.url("/sitemap.xml")},
    )
    assert crawl_pages_used(workspace) == 4 and len(site.page_requests()) == 4
    source = scheduled_sync(source)  # 4 to fetch again, 2 left today
    assert len(site.page_requests()) == 6 and crawl_pages_used(workspace) == 6
    assert counts(source) == {"added": 0, "changed": 0, "unchanged": 2, "removed": 0, "failed": 0}
    assert source.last_sync["held_back"] == 2
    assert outcome_summary(source.last_sync).endswith(", 2 held back (daily crawl quota)")
    assert "2 pages not fetched today" in source.notice and source.status == "done"
    held = Document.unscoped.filter(source_id=source.id, sync_outcome="held_back")
    assert held.count() == 2 and set(held.values_list("status", flat=True)) == {"done"}
    assert all(found(workspace, word) for word in WORDS[:4])  # held back pages keep their passages


def test_a_feeds_rechecked_items_count_against_todays_crawl_pages(eager, site, workspace, agent):
    _small_plan(workspace, max_crawl_pages_per_day=5)

    def publish_feed(paths: list[str]) -> None:
        items = "".join(f"<item><title>{p}</title><link>{site.server.url(p)}</link></item>" for p in paths)
        body = f'<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>{items}</channel></rss>'
        site.server.routes["/feed.xml"] = Reply(200, body, content_type="application/rss+xml")

    for i, word in enumerate(WORDS[:3]):
        site.page(f"/p/{i}", article(word), listed=False)
    publish_feed(["/p/0", "/p/1"])
    source = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="feed",
        title="",
        payload={"url": site.server.url("/feed.xml")},
    )
    assert crawl_pages_used(workspace) == 2 and len(site.page_requests()) == 2
    publish_feed(["/p/2"])  # one new item; the two others left the feed and are re-checked
    source = scheduled_sync(source)
    # Every page fetched is a crawl page: the new item and the two re-checked ones.
    assert len(site.page_requests()) == 5 and crawl_pages_used(workspace) == 5
    assert source.last_sync["added"] == 1 and source.last_sync["held_back"] == 0
    source = scheduled_sync(source)  # today's 5 are used up: nothing is fetched, and the sync says why
    assert len(site.page_requests()) == 5 and crawl_pages_used(workspace) == 5
    assert source.last_sync["held_back"] == 3 and source.last_sync["unchanged"] == 0
    assert "3 pages not fetched today" in source.notice and source.status == "done"
    assert all(found(workspace, word) for word in WORDS[:3])


def test_the_sync_summary_names_the_pages_skipped_on_purpose() -> None:
    last_sync = {"added": 1, "changed": 0, "unchanged": 5, "removed": 0, "failed": 1, "skipped": 3}
    assert outcome_summary(last_sync) == "1 added, 0 changed, 5 unchanged, 0 removed, 1 failed, 3 skipped"
    assert outcome_summary({**last_sync, "skipped": 0}).endswith("1 failed")
