"""robots.txt Crawl-delay, honoured across a real Celery worker's page jobs."""

from __future__ import annotations

import itertools
import time

import pytest

from tests.factories import wait_for
from tests.ingestion.crawl.servers import Reply, send, serving
from tests.ingestion.test_pages import add_source, finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_crawl_delay_spaces_the_requests_to_a_site(celery_worker, api, agent):
    times: list[float] = []

    def missing(handler):
        # Pages that fail at once (404, nothing to index), so only the delay can space the requests.
        times.append(time.monotonic())
        send(handler, Reply(404, "<html><title>Not found</title></html>"))

    with serving(
        {"/robots.txt": Reply(200, "User-agent: *\nCrawl-delay: 1\n", content_type="text/plain")}
    ) as site:
        pages = [f"/p/{i}" for i in range(5)]
        site.routes.update({path: missing for path in pages})
        listing = "\n".join(site.url(path) for path in pages)
        site.routes["/sitemap.txt"] = Reply(200, listing, content_type="text/plain")
        source_id = add_source(api, agent, "sitemap", site.url("/sitemap.txt"))
        body = wait_for(lambda: finished(api, source_id), timeout=120)
    assert body["pages_failed"] == 5 and body["error"] == "Every page failed: 5 not found.", body
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert len(times) == 5 and min(gaps) >= 0.95, gaps
