"""300 widget conversations streaming at once from one web container, on the image's ASGI server beside the
threaded WSGI server Grounded ran before (gunicorn gthread, 2 workers x 4 threads, as `make run` had it).

Two answerers: the built-in extractive one (CPU only), and a local OpenAI-compatible model that streams
50 tokens at 20 tokens/s. Each conversation comes from its own address (X-Real-IP through
TRUSTED_PROXY_HEADER, as behind a proxy), so the per-address limit does not refuse them; a burst from one
address afterwards checks that it still holds. Reports: completed / dropped, p50 and p95 time to the first
event, p95 time to `done`, wall time, and the servers' extra resident memory per open stream.

    GROUNDED_BENCH_STREAMS=300 make bench      (the default; fewer for a quick look)
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
from django.conf import settings

from tests.config.web_server import many_streams, percentile, slow_model, web_server
from tests.factories import index_text

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

STREAMS = int(os.environ.get("GROUNDED_BENCH_STREAMS", "300"))
ORIGIN = "https://acme.example"
RETURNS = (
    "Return any item within 30 days of delivery for a full refund. Items must be unused and in their "
    "original packaging. Refunds reach the original payment method within five working days."
)


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def make_agent(workspace, name: str, model_url: str = ""):
    from agents.models import Agent
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        agent = Agent.objects.create(
            name=name, allowed_origins=[ORIGIN], llm_base_url=model_url, llm_model="slow" if model_url else ""
        )
    index_text(workspace, agent, "Returns", RETURNS)
    return agent


def run(server, agent, count: int, label: str) -> dict:
    url = f"{server.url}/api/v1/agents/{agent.public_key}/chat/stream"
    addresses = [f"10.{i // 250}.{i % 250}.7" for i in range(count)]
    # Warm up (the embedder loads on a process's first search) so the memory measured is the streams'.
    asyncio.run(many_streams(url, 16, origin=ORIGIN, addresses=[f"10.200.0.{i}" for i in range(16)]))
    idle = server.rss_bytes()
    peak = [idle]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], server.rss_bytes())
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    results = asyncio.run(many_streams(url, count, origin=ORIGIN, addresses=addresses))
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    completed = [r for r in results if r.completed]
    first = [r.first_event_s for r in completed]
    done = [r.done_s for r in completed]
    row = {
        "run": label,
        "completed": len(completed),
        "dropped": count - len(completed),
        "statuses": sorted({r.status for r in results}),
        "p50_first_s": percentile(first, 0.5) if first else None,
        "p95_first_s": percentile(first, 0.95) if first else None,
        "p95_done_s": percentile(done, 0.95) if done else None,
        "wall_s": wall,
        "kb_per_stream": (peak[0] - idle) / 1024 / count,
        "errors": sorted({r.error for r in results if r.error})[:3],
    }
    return row


def print_table(rows: list[dict]) -> None:
    print()
    print(
        f"{STREAMS} concurrent widget conversations, one web container (2 worker processes), 2 shared cores"
    )
    print(
        f"{'run':44} {'done':>5} {'drop':>5} {'p50 1st':>8} {'p95 1st':>8} {'p95 end':>8} "
        f"{'wall':>7} {'KB/stream':>10}"
    )
    for row in rows:
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        print(
            f"{row['run']:44} {row['completed']:>5} {row['dropped']:>5} {fmt(row['p50_first_s']):>8} "
            f"{fmt(row['p95_first_s']):>8} {fmt(row['p95_done_s']):>8} {row['wall_s']:>7.1f} "
            f"{row['kb_per_stream']:>10.0f}"
        )
        if row["errors"] or row["dropped"]:
            print(f"    statuses {row['statuses']}, errors {row['errors']}")


def test_streams_at_scale_asgi_beside_the_threaded_server(workspace):
    rows = []
    env = {"WEB_CONCURRENCY": "2", "TRUSTED_PROXY_HEADER": "HTTP_X_REAL_IP"}
    with slow_model(tokens=50, rate=20.0) as model:
        for server_kind, extra in (
            ("asgi", {}),
            # Today's server, as `make run` ran it before: 2 x 4 threads, persistent connections.
            ("gthread", {"WEB_THREADS": "4", "DATABASE_CONN_MAX_AGE": "60"}),
        ):
            with web_server(
                test_run_id=settings.TEST_RUN_ID,
                database_url=database_url(),
                server=server_kind,
                **env,
                **extra,
            ) as server:
                for answerer in ("extractive", "slow model"):
                    # A fresh agent per run: the per-agent limit (600/min) counts each run on its own.
                    agent = make_agent(
                        workspace,
                        f"{server_kind} {answerer}",
                        model.base_url if answerer != "extractive" else "",
                    )
                    label = f"{server_kind:8} {answerer}"
                    rows.append(run(server, agent, STREAMS, label))
                # The per-address limit (30/min) still holds during a burst: 33 from one address.
                burst_agent = make_agent(workspace, f"{server_kind} burst")
                url = f"{server.url}/api/v1/agents/{burst_agent.public_key}/chat/stream"
                burst = asyncio.run(many_streams(url, 33, origin=ORIGIN, addresses=["10.9.9.9"] * 33))
                refused = [r.status for r in burst].count(429)
                rows[-1]["burst_refused"] = refused
                print(f"{server_kind}: burst of 33 from one address -> {refused} refused (429)")
                assert refused == 3
    print_table(rows)
    asgi = [row for row in rows if row["run"].startswith("asgi")]
    for row in asgi:
        assert row["dropped"] == 0, row
