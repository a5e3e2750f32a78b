"""Fair work across workspaces: a small source in workspace B while workspace A's big crawl runs.

Issue #14 measured a one-paragraph text source taking 36 s to be indexed while another workspace's 769-page
crawl ran (1-3 s idle). Goal: B's small source reaches done within 2x its idle time while A's crawl runs, and
A's crawl proceeds at full speed when nobody else waits (ingestion/jobs/lanes.py).

One run, real worker processes in the layout of `make run` (a crawl worker x2 and an index worker x1, both
also consuming the interactive queue), a generated documentation site served on 127.0.0.1
(tests/bench/generated_site.py; GROUNDED_BENCH_FAIR_PAGES, 120 with GROUNDED_BENCH_FAIRNESS=full as in
`make bench`, 12 otherwise: `make test` only keeps the machinery tested). Lanes off (first come, first
served: the baseline), then on:
  - B idle: a one-paragraph text source in B, created and waited for, one at a time (the first run loads
    the model in a worker process and is left out), before and after the crawls;
  - A with B: A's sitemap crawled from scratch to done; from 5 s in (1 s on the small site), a text source
    in B every 2 s, each waited for, until A is done: B's seconds (median, max) and A's pages/s;
  - lanes on only, A alone: the same crawl with nobody else waiting, A's pages/s: the lanes must not slow
    it (compare with A with B, lanes off and on: B's few paragraphs cost A next to nothing).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import pytest
from django.conf import settings

from ingestion import lifecycle
from sources.models import Source
from tests.bench.generated_site import generate
from tests.bench.test_pipeline_bench import _sitemap, _workers
from tests.ingestion.crawl.servers import Reply, serving

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

FULL = os.environ.get("GROUNDED_BENCH_FAIRNESS") == "full"
PAGES = int(os.environ.get("GROUNDED_BENCH_FAIR_PAGES", "120" if FULL else "12"))
B_FROM_S = 5.0 if FULL else 1.0
# A source of at most this many pages is small (ingestion/jobs/lanes.py): the small site must be bigger
# than that.
SMALL_PAGES = settings.INGESTION_SMALL_SOURCE_PAGES if FULL else 4
PARAGRAPH = (
    "Returns are accepted within thirty days of delivery when the item is unused and in its original "
    "packaging; refunds go back to the original payment method within five working days of our receiving it."
)


def _wait_done(source_id: int, timeout: float = 900) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        row = Source.unscoped.filter(id=source_id).values("status", "pages_done", "pages_failed").first()
        if row["status"] in ("done", "failed") or time.monotonic() > deadline:
            return row
        time.sleep(0.05)


def _text_seconds(workspace, agent, title: str) -> float:
    started = time.perf_counter()
    source = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="text", title=title, payload={"content": PARAGRAPH}
    )
    row = _wait_done(source.id, timeout=300)
    assert row["status"] == "done", row
    return round(time.perf_counter() - started, 2)


def _crawl(workspace, agent, sitemap_url: str, *, during=None) -> dict:
    """A's crawl to done; `during(progress)` is called while it runs (B's sources)."""
    started = time.perf_counter()
    source = lifecycle.source_create(
        workspace=workspace, agent_id=agent.id, kind="sitemap", title="A's site", payload={"url": sitemap_url}
    )
    b_seconds: list[float] = []
    while True:
        row = Source.unscoped.filter(id=source.id).values("status", "pages_done", "pages_failed").first()
        if row["status"] in ("done", "failed"):
            break
        if during is not None and time.perf_counter() - started >= B_FROM_S:
            b_seconds.append(during(len(b_seconds)))
            time.sleep(2.0)  # a person adding a source now and then, not a flood
        else:
            time.sleep(0.1)
    seconds = time.perf_counter() - started
    pages = row["pages_done"] + row["pages_failed"]
    result = {"status": row["status"], "pages": pages, "seconds": round(seconds, 1)}
    result["pages_per_s"] = round(pages / seconds, 2)
    if during is not None:
        result["b_seconds"] = b_seconds
    # The next crawl starts from nothing (a re-sync would skip unchanged pages).
    lifecycle.source_delete(source=Source.unscoped.get(id=source.id))
    return result


def _mode(lanes_on: bool, sitemap_url: str, a, b) -> dict:
    # What this process publishes; the workers get the same by env.
    settings.INGESTION_LANES, settings.INGESTION_SMALL_SOURCE_PAGES = lanes_on, SMALL_PAGES
    tag = "fair" if lanes_on else "fifo"
    env = {"INGESTION_LANES": str(lanes_on).lower(), "INGESTION_SMALL_SOURCE_PAGES": str(SMALL_PAGES)}
    with _workers(f"fairness-{tag}", env):
        idle = [_text_seconds(*b, f"idle {i}") for i in range(4)][1:]
        busy = _crawl(*a, sitemap_url, during=lambda i: _text_seconds(*b, f"busy {i}"))
        alone = _crawl(*a, sitemap_url) if lanes_on else None
        idle_after = [_text_seconds(*b, f"idle after {i}") for i in range(3)]
    idle_all = idle + idle_after
    b_busy = busy.pop("b_seconds")
    result = {
        "b_idle_seconds": idle_all,
        "b_idle_median": statistics.median(idle_all),
        "b_during_crawl_seconds": b_busy,
        "b_during_crawl_median": statistics.median(b_busy) if b_busy else None,
        "b_during_crawl_max": max(b_busy) if b_busy else None,
        "a_with_b": busy,
    }
    if b_busy:
        result["b_ratio_to_idle"] = round(result["b_during_crawl_median"] / result["b_idle_median"], 2)
    if alone is not None:
        result["a_alone"] = alone
        result["a_with_b_to_alone"] = round(busy["pages_per_s"] / alone["pages_per_s"], 2)
    return result


def test_a_small_source_in_b_is_not_held_up_by_a_big_crawl_in_a(
    workspace, agent, other_workspace, other_agent
):
    original = settings.INGESTION_LANES, settings.INGESTION_SMALL_SOURCE_PAGES
    try:
        with tempfile.TemporaryDirectory() as folder, serving(root=Path(folder)) as server:
            names = generate(Path(folder), count=PAGES)
            server.routes["/sitemap.xml"] = _sitemap([server.url(f"/{name}") for name in names])
            server.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", content_type="text/plain")
            a, b = (workspace, agent), (other_workspace, other_agent)
            runs = {
                mode: _mode(mode == "lanes", server.url("/sitemap.xml"), a, b) for mode in ("fifo", "lanes")
            }
    finally:
        settings.INGESTION_LANES, settings.INGESTION_SMALL_SOURCE_PAGES = original
    result = {
        "benchmark": "fairness",
        "site_pages": PAGES,
        "cores": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        **runs,
    }
    print(json.dumps(result))
    assert runs["lanes"]["a_alone"]["status"] == "done"
    assert all(mode["a_with_b"]["status"] == "done" for mode in runs.values())
    assert runs["lanes"]["b_during_crawl_seconds"], "the crawl ended before B's first source"
