"""A crawl's fan-out stops at the plan's quotas with a notice on the source, never silently: new pages up
to the documents quota, fetches up to today's crawl pages. Run in this process (expansion.source_expand)
against a site on 127.0.0.1."""

from __future__ import annotations

import pytest

from ingestion import expansion
from sources import metering
from sources.models import Document, Plan, Source, Status
from sources.plans import assign_plan
from sources.tenancy import workspace_scope
from tests.ingestion.crawl.servers import Reply, serving

pytestmark = pytest.mark.django_db(transaction=True)


def _urlset(server, paths: list[str]) -> Reply:
    entries = "".join(f"<url><loc>{server.url(path)}</loc></url>" for path in paths)
    body = (
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )
    return Reply(200, body, content_type="application/xml")


def _expand(workspace, agent, paths, **limits):
    Plan.objects.create(name="small", **limits)
    assign_plan(workspace, "small")
    with serving({"/robots.txt": Reply(404, "")}) as server:
        server.routes["/sitemap.xml"] = _urlset(server, paths)
        with workspace_scope(workspace.id):
            source = Source.objects.create(
                agent=agent, kind="sitemap", title="Site", config={"url": server.url("/sitemap.xml")}
            )
        queued = expansion.source_expand(source=source)
    with workspace_scope(workspace.id):
        return Source.objects.get(id=source.id), queued, server


def test_fan_out_stops_at_the_documents_quota_with_a_notice(workspace, agent):
    listed = [f"/docs/{i}.html" for i in range(10)]
    source, queued, server = _expand(workspace, agent, listed, max_documents=4)
    with workspace_scope(workspace.id):
        urls = list(Document.objects.order_by("id").values_list("url", flat=True))
    assert urls == [server.url(p) for p in listed[:4]] and len(queued) == 4
    assert source.pages_total == 4 and source.status == Status.CRAWLING
    assert "limit of 4 pages and documents: 6 listed pages not added" in source.notice
    assert source.state["quota_stopped"] == {"documents": 6}
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 4  # what was queued


def test_fan_out_stops_at_todays_crawl_pages_with_a_notice(workspace, agent):
    listed = [f"/docs/{i}.html" for i in range(10)]
    source, queued, _server = _expand(workspace, agent, listed, max_crawl_pages_per_day=3)
    assert len(queued) == 3 and source.pages_total == 3
    assert "3 crawl pages per day are used up: 7 pages not fetched today" in source.notice
    assert source.state["quota_stopped"] == {"crawl_pages": 7}
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 3


def test_a_source_with_no_room_at_all_fails_with_the_reason_and_counts_nothing(workspace, agent):
    source, queued, _server = _expand(workspace, agent, ["/a.html"], max_documents=0)
    assert queued == [] and source.status == Status.FAILED
    assert "limit of 0 pages and documents" in source.error
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 0
    with workspace_scope(workspace.id):
        assert not Document.objects.exists()


def test_a_resync_refetches_known_pages_only_as_far_as_todays_crawl_pages_go(workspace, agent):
    listed = [f"/docs/{i}.html" for i in range(4)]
    source, queued, server = _expand(workspace, agent, listed, max_crawl_pages_per_day=6)
    assert len(queued) == 4
    with workspace_scope(workspace.id):
        Document.objects.update(status=Status.DONE, due_by=None)
        Source.objects.filter(id=source.id).update(status=Status.PENDING)
    with serving({"/robots.txt": Reply(404, "")}) as again:
        # The same paths on the same server address are gone; list the known URLs from a new sitemap.
        entries = "".join(f"<url><loc>{server.url(p)}</loc></url>" for p in listed)
        again.routes["/sitemap.xml"] = Reply(
            200,
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}'
            "</urlset>",
            content_type="application/xml",
        )
        with workspace_scope(workspace.id):
            Source.objects.filter(id=source.id).update(config={"url": again.url("/sitemap.xml")})
            source = Source.objects.get(id=source.id)
        requeued = expansion.source_expand(source=source)
    assert len(requeued) == 2  # 6 a day, 4 used by the first crawl
    with workspace_scope(workspace.id):
        source = Source.objects.get(id=source.id)
        kept = Document.objects.exclude(id__in=requeued)
        assert kept.count() == 2 and set(kept.values_list("status", flat=True)) == {Status.DONE}
        assert set(kept.values_list("sync_outcome", flat=True)) == {"held_back"}  # not "unchanged"
    assert "2 pages not fetched today" in source.notice and source.pages_total == 4
