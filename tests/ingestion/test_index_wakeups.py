"""A crawled page queues an index job only when no job that would claim it is waiting
(ingestion/index_wakeups.py): the mark on the real Redis, and a site crawled by the real worker."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.conf import settings

from ingestion import index_wakeups, lanes
from sources.models import Chunk, Document
from tests.factories import wait_for
from tests.ingestion.crawl.servers import Reply, serving
from tests.ingestion.test_pages import ARTICLE, add_source, finished

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = 12
WS = 10_000_007  # no workspace of the test database: the marks of real crawls are left alone


def test_a_page_crawled_while_a_job_waits_queues_none_and_one_crawled_after_it_started_does(settings):
    key = index_wakeups.wake_key(workspace_id=WS, source_id=3, lane=lanes.BULK)
    index_wakeups.started(key, workspace_id=WS)  # nothing left from another test
    assert index_wakeups.should_queue(key)  # the first page queues the job
    assert not index_wakeups.should_queue(key)  # the next ones find it waiting: its claim takes them
    assert not index_wakeups.should_queue(key)
    index_wakeups.started(key, workspace_id=WS)  # the job starts, before it claims
    assert index_wakeups.should_queue(key)  # a page crawled now is not in that claim: a job of its own
    index_wakeups.started(key, workspace_id=WS)


def test_the_mark_expires_so_a_lost_job_only_delays_the_next_one(settings):
    settings.INDEX_WAKE_TTL = 1
    key = index_wakeups.wake_key(workspace_id=WS, source_id=1, lane=lanes.BULK)
    index_wakeups.started(key, workspace_id=WS)
    assert index_wakeups.should_queue(key)
    time.sleep(1.2)  # the job never started (lost): the mark is gone, and the next page queues a job
    assert index_wakeups.should_queue(key)
    index_wakeups.started(key, workspace_id=WS)


def test_marks_are_per_workspace_and_per_source_in_the_interactive_lane():
    interactive = lanes.interactive()
    keys = {
        index_wakeups.wake_key(workspace_id=1, source_id=1, lane=lanes.BULK),
        index_wakeups.wake_key(workspace_id=2, source_id=1, lane=lanes.BULK),
        index_wakeups.wake_key(workspace_id=1, source_id=1, lane=interactive),
        index_wakeups.wake_key(workspace_id=1, source_id=2, lane=interactive),
    }
    assert len(keys) == 4  # an interactive job claims only its own source's pages
    # A bulk job claims every waiting page of its workspace, whatever their source.
    assert index_wakeups.wake_key(workspace_id=1, source_id=1, lane=lanes.BULK) == index_wakeups.wake_key(
        workspace_id=1, source_id=9, lane=lanes.BULK
    )


def test_a_job_clears_no_other_workspaces_mark():
    theirs = index_wakeups.wake_key(workspace_id=WS + 1, source_id=1, lane=lanes.BULK)
    index_wakeups.started(theirs, workspace_id=WS + 1)
    assert index_wakeups.should_queue(theirs)
    index_wakeups.started(theirs, workspace_id=WS)  # a message naming another workspace's mark
    assert not index_wakeups.should_queue(theirs)  # still set: their waiting job still takes their pages
    index_wakeups.started(theirs, workspace_id=WS + 1)


def test_without_redis_every_page_queues_its_job(settings):
    settings.CACHES = {
        "default": {"BACKEND": "config.redis_cache.RedisCache", "LOCATION": "redis://127.0.0.1:9/0"}
    }
    key = index_wakeups.wake_key(workspace_id=WS, source_id=1, lane=lanes.BULK)
    assert index_wakeups.should_queue(key) and index_wakeups.should_queue(key)
    index_wakeups.started(key, workspace_id=WS)  # and clearing the mark does not fail the job


def test_with_coalescing_off_every_page_queues_its_job(settings):
    settings.INDEX_COALESCE_PAGE_JOBS = False
    key = index_wakeups.wake_key(workspace_id=WS, source_id=2, lane=lanes.BULK)
    assert index_wakeups.should_queue(key) and index_wakeups.should_queue(key)


def _index_jobs_received(log: Path, offset: int) -> int:
    text = log.read_bytes()[offset:].decode(errors="replace")
    return len(re.findall(r"Task ingestion\.tasks\.index_document\[[^\]]+\] received", text))


@pytest.mark.worker
def test_a_site_crawled_by_the_worker_is_indexed_whole_in_fewer_jobs_than_pages(celery_worker, api, agent):
    log = Path(settings.BASE_DIR) / ".local" / f"test-worker-{settings.TEST_RUN_ID}.log"
    offset = log.stat().st_size
    routes = {f"/p/{i}.html": Reply(200, ARTICLE.format(title=f"Kettle {i}")) for i in range(PAGES)}
    with serving(routes) as site:
        entries = "".join(f"<url><loc>{site.url(path)}</loc></url>" for path in routes)
        site.routes["/sitemap.xml"] = Reply(
            200,
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>',
            content_type="application/xml",
        )
        source_id = add_source(api, agent, "sitemap", site.url("/sitemap.xml"))
        body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["status"] == "done" and body["pages_done"] == PAGES, body
    pages = Document.unscoped.filter(source_id=source_id)
    assert all(p.status == "done" for p in pages)
    assert Chunk.unscoped.filter(source_id=source_id).values("document_id").distinct().count() == PAGES
    jobs = _index_jobs_received(log, offset)
    # One job per page before; the worker crawls pages in waves of CRAWL_WAVE_SIZE, and one job claims
    # what was crawled while it waited.
    assert 1 <= jobs <= PAGES // 2, jobs
