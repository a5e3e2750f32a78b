"""Lanes by work, not by count (issue #56): another workspace's small sources, added several at once, while
a big crawl and a big Notion sync run.

Goal: B's small sources reach done within 2x their idle time while A's big crawl and A's big Notion sync run,
however many B adds at once. Before, a workspace's third and later sources in progress went to the bulk
lane, and one paragraph waited over 2 minutes behind another workspace's crawl; connector jobs skipped the
lanes altogether (ingestion/jobs/lanes.py, integrations/tasks.py).

One run, real worker processes in the layout of `make run` (tests/bench/test_pipeline_bench._workers: a crawl
worker x2 and an index worker x1, both also consuming the interactive queue), lanes on:
  - idle (the baseline): B adds N one-paragraph text sources at once (N in BATCHES), nothing else running;
    each source's seconds from the request to done, and the batch's (the last one's);
  - busy: A's generated site (tests/bench/generated_site.py, served on 127.0.0.1) crawled from scratch, and a
    Notion source of A synced from the fake Notion server the integration tests use (tests/fakes/), both
    started together; from B_FROM_S in, B adds batches of N (cycling through BATCHES) until both are done;
  - idle again after, to see the load drift.
GROUNDED_BENCH_LANES=full (make bench): a 120-page site, 100 Notion pages, batches of 1, 5 and 20; otherwise
12 and 12 with small-source threshold 4 and batches of 1 and 5 (the machinery only).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from ingestion import lifecycle
from integrations.models import Connection, Provider
from sources.models import Source
from sources.tenancy import workspace_scope
from tests.bench.generated_site import generate
from tests.bench.test_pipeline_bench import _sitemap, _workers
from tests.fakes.notion_server import FakeNotion, block
from tests.ingestion.crawl.servers import Reply, serving

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

FULL = os.environ.get("GROUNDED_BENCH_LANES") == "full"
SITE_PAGES = int(os.environ.get("GROUNDED_BENCH_LANES_SITE_PAGES", "120" if FULL else "12"))
NOTION_PAGES = int(os.environ.get("GROUNDED_BENCH_LANES_NOTION_PAGES", "100" if FULL else "12"))
BATCHES = [
    int(n) for n in os.environ.get("GROUNDED_BENCH_LANES_BATCHES", "1,5,20" if FULL else "1,5").split(",")
]
B_FROM_S = 5.0 if FULL else 1.0
SMALL_PAGES = settings.INGESTION_SMALL_SOURCE_PAGES if FULL else 4
PARAGRAPH = (
    "Returns are accepted within thirty days of delivery when the item is unused and in its original "
    "packaging; refunds go back to the original payment method within five working days of our receiving it."
)
CHAPTER = [
    "The kettle's base must stay dry; wipe it with a soft cloth and never put it in the dishwasher.",
    "Descale every month in hard-water areas with a spoon of citric acid in half a litre of water.",
    "The filter lifts out from the spout; rinse it under the tap and let it dry before putting it back.",
    "If the kettle switches off before boiling, descale it; if it still does, contact support for a repair.",
]


@contextmanager
def _fake_notion(fake: FakeNotion, pages: int) -> Iterator[tuple[FakeNotion, str]]:
    """The session's fake Notion (on the port the test settings give this run, which its workers read),
    holding a handbook page with `pages` - 1 chapters under it; yields the fake and the handbook's id."""
    fake.reset()
    fake.page_size = 25
    try:
        handbook = fake.add_page("Kettle handbook", [block("paragraph", CHAPTER[0])])
        for i in range(pages - 1):
            blocks = [block("heading_2", f"Chapter {i}")]
            blocks += [
                block("paragraph", f"{line} (chapter {i}, note {j})") for j, line in enumerate(CHAPTER * 3)
            ]
            fake.add_page(f"Chapter {i}", blocks, parent=handbook)
        yield fake, handbook
    finally:
        del fake.page_size  # back to the class's default for the next test
        fake.reset()


def _statuses(ids: list[int]) -> list[str]:
    return list(Source.unscoped.filter(id__in=ids).values_list("status", flat=True))


def _batch(workspace, agent, count: int, title: str) -> dict:
    """B adds `count` text sources at once (as fast as it can post them); each one's seconds to done."""
    started = time.perf_counter()
    ids, done_at = [], {}
    for i in range(count):
        source = lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="text",
            title=f"{title} {i}",
            payload={"content": PARAGRAPH},
        )
        ids.append(source.id)
    deadline = time.monotonic() + 600
    while len(done_at) < count and time.monotonic() < deadline:
        for source_id, status in Source.unscoped.filter(id__in=ids).values_list("id", "status"):
            if status in ("done", "failed") and source_id not in done_at:
                assert status == "done", source_id
                done_at[source_id] = time.perf_counter() - started
        time.sleep(0.05)
    assert len(done_at) == count, f"{count - len(done_at)} of B's sources not done in 600 s"
    seconds = sorted(round(s, 2) for s in done_at.values())
    return {"n": count, "median": statistics.median(seconds), "last": seconds[-1], "seconds": seconds}


def _a_starts(workspace, agent, sitemap_url: str, connection: Connection, handbook: str) -> list[int]:
    crawl = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="sitemap", title="A's site", payload={"url": sitemap_url}
    )
    notion = lifecycle.source_create(
        workspace=workspace,
        agent_id=agent.id,
        kind="notion",
        title="A's handbook",
        payload={"connection": connection.id, "items": [{"id": handbook, "type": "page"}]},
    )
    return [crawl.id, notion.id]


def _a_progress(ids: list[int]) -> list[dict]:
    return list(
        Source.unscoped.filter(id__in=ids)
        .order_by("id")
        .values("kind", "status", "pages_total", "pages_done", "pages_failed")
    )


def test_b_small_sources_in_batches_beside_a_big_crawl_and_a_big_notion_sync(
    workspace, agent, owner, other_workspace, other_agent, _notion_server
):
    original = settings.INGESTION_SMALL_SOURCE_PAGES
    settings.INGESTION_SMALL_SOURCE_PAGES = SMALL_PAGES
    env = {"INGESTION_SMALL_SOURCE_PAGES": str(SMALL_PAGES)}
    b = (other_workspace, other_agent)
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            serving(root=Path(folder)) as server,
            _fake_notion(_notion_server, NOTION_PAGES) as (fake, handbook),
            _workers("lanes", env),
        ):
            names = generate(Path(folder), count=SITE_PAGES)
            server.routes["/sitemap.xml"] = _sitemap([server.url(f"/{name}") for name in names])
            server.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", content_type="text/plain")
            with workspace_scope(workspace.id):
                connection = Connection.objects.create(
                    provider=Provider.NOTION,
                    account_id="bot-bench",
                    account_name="Acme Handbook",
                    access_token=fake.issue_token(),
                    connected_by=owner,
                )
            _batch(*b, 1, "warm-up")  # the first job of a process pays for imports
            idle = [_batch(*b, n, f"idle {n}") for n in BATCHES]
            started = time.perf_counter()
            a_ids = _a_starts(workspace, agent, server.url("/sitemap.xml"), connection, handbook)
            busy: list[dict] = []
            while any(s in ("pending", "crawling", "indexing") for s in _statuses(a_ids)):
                if time.perf_counter() - started < B_FROM_S:
                    time.sleep(0.1)
                    continue
                n = BATCHES[len(busy) % len(BATCHES)]
                busy.append({**_batch(*b, n, f"busy {n}"), "at_s": round(time.perf_counter() - started, 1)})
                time.sleep(1.0)
            a_seconds = round(time.perf_counter() - started, 1)
            a = _a_progress(a_ids)
            idle_after = [_batch(*b, n, f"idle after {n}") for n in BATCHES]
    finally:
        settings.INGESTION_SMALL_SOURCE_PAGES = original
    by_n = {}
    for n in BATCHES:
        quiet = [r for r in [*idle, *idle_after] if r["n"] == n]
        during = [r for r in busy if r["n"] == n]
        idle_median = statistics.median(s for r in quiet for s in r["seconds"])
        idle_last = statistics.median(r["last"] for r in quiet)
        entry = {"idle_median_s": idle_median, "idle_last_s": idle_last, "batches_during": len(during)}
        if during:
            busy_seconds = [s for r in during for s in r["seconds"]]
            entry.update(
                busy_median_s=statistics.median(busy_seconds),
                busy_max_s=max(busy_seconds),
                busy_last_median_s=statistics.median(r["last"] for r in during),
                median_ratio=round(statistics.median(busy_seconds) / idle_median, 2),
                last_ratio=round(statistics.median(r["last"] for r in during) / idle_last, 2),
                within_2x=f"{sum(s <= 2 * idle_median for s in busy_seconds)}/{len(busy_seconds)}",
            )
        by_n[n] = entry
    result = {
        "benchmark": "lanes",
        "site_pages": SITE_PAGES,
        "notion_pages": NOTION_PAGES,
        "cores": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "a": a,
        "a_seconds": a_seconds,
        "by_batch": by_n,
        "idle": idle,
        "busy": busy,
        "idle_after": idle_after,
    }
    print(json.dumps(result))
    # A's work must really have run: pages failed (e.g. index batches past their time limit on a loaded
    # machine) end it early and leave B a lighter load than the goal is about.
    assert all(row["status"] == "done" and row["pages_done"] == row["pages_total"] for row in a), a
    assert busy, "A's work ended before B's first batch"
