"""Prometheus metrics: what they are, where they are recorded, and the `/metrics` view.

Every process (gunicorn workers, Celery's pool processes) records into its own files under
PROMETHEUS_MULTIPROC_DIR when that is set (prometheus_client's multiprocess mode), and `/metrics` adds them
up; in compose the web and worker containers share that directory, so one scrape sees them all. Without it
(tests, a single process) the default registry is served. Gauges that describe the deployment rather than a
process (queue depth, sources syncing) are computed when scraped, by the process that answers.

`/metrics` needs `Authorization: Bearer METRICS_TOKEN`; with no token configured it answers 404, so a
deployment never publishes its numbers by accident. Workers on other machines serve their own directory on
WORKER_METRICS_PORT instead (see README, "Running at scale").

Useful queries: the semantic cache hit ratio is
  sum(rate(grounded_semantic_cache_lookups_total{result="hit"}[5m]))
    / sum(rate(grounded_semantic_cache_lookups_total[5m]))
and pages crawled per second `sum(rate(grounded_pages_crawled_total[5m]))`.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Each process writes its own files there from the first metric on; a missing directory would fail them.
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUEST_SECONDS = Histogram(
    "grounded_http_request_duration_seconds",
    "Time to the response's headers (for a stream: to its first byte), by URL route.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
SEARCH_SECONDS = Histogram(
    "grounded_search_duration_seconds",
    "A search, from query to passages, by mode.",
    ["mode"],
    buckets=LATENCY_BUCKETS,
)
SEMANTIC_CACHE = Counter(
    "grounded_semantic_cache_lookups", "Agent searches answered by the semantic cache or not.", ["result"]
)
EMBED_SECONDS = Histogram(
    "grounded_embedder_duration_seconds",
    "One embedder call, by what was embedded.",
    ["purpose"],
    buckets=LATENCY_BUCKETS,
)
CHUNKS_EMBEDDED = Counter("grounded_chunks_embedded", "Chunks embedded and stored.")
RESIDENT_BUILDS = Counter(
    "grounded_search_resident_builds",
    "Copies of a workspace's vectors read into a web process for searches in memory (retrieval/resident.py),"
    " by outcome: held, too_large (searched in the store), failed. One per workspace and generation"
    " searched.",
    ["outcome"],
)
PAGES_CRAWLED = Counter("grounded_pages_crawled", "Page jobs finished, by outcome.", ["outcome"])
TASKS = Counter(
    "grounded_tasks",
    "Celery task outcomes; failure_class is the exception's class.",
    ["task", "outcome", "failure_class"],
)
TASK_SECONDS = Histogram(
    "grounded_task_duration_seconds", "Celery task run time.", ["task"], buckets=LATENCY_BUCKETS
)
QUOTA_REFUSALS = Counter(
    "grounded_quota_refusals", "Requests refused because a workspace reached a quota.", ["workspace", "quota"]
)


# --- hooks the code calls ------------------------------------------------------------------------


@contextmanager
def timed(histogram: Histogram, **labels: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        histogram.labels(**labels).observe(time.perf_counter() - started)


def semantic_cache_lookup(*, hit: bool) -> None:
    SEMANTIC_CACHE.labels(result="hit" if hit else "miss").inc()


def quota_refused(*, workspace_id: int, quota: str) -> None:
    QUOTA_REFUSALS.labels(workspace=str(workspace_id), quota=quota).inc()


# --- request latency -----------------------------------------------------------------------------


class RequestMetricsMiddleware:
    """Latency by route pattern (bounded cardinality: never the raw path). Works for sync and async views."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        started = time.perf_counter()
        response = self.get_response(request)
        self._observe(request, response, started)
        return response

    async def _acall(self, request: HttpRequest) -> Any:
        started = time.perf_counter()
        response = await self.get_response(request)
        self._observe(request, response, started)
        return response

    @staticmethod
    def _observe(request: HttpRequest, response: HttpResponse, started: float) -> None:
        match = getattr(request, "resolver_match", None)
        route = (match.route or match.view_name) if match else "<unresolved>"
        REQUEST_SECONDS.labels(route=route, method=request.method, status=str(response.status_code)).observe(
            time.perf_counter() - started
        )


# --- gauges computed when scraped ----------------------------------------------------------------


class DeploymentCollector:
    """Queue depth per Celery queue (Redis LLEN of the broker's lists) and sources in flight by status."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._queue_depth()
        yield from self._sources_syncing()

    def _queue_depth(self) -> Iterator[GaugeMetricFamily]:
        import redis

        url = settings.CELERY_BROKER_URL
        if not url.startswith(("redis://", "rediss://")):
            return
        family = GaugeMetricFamily(
            "grounded_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "")
        client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        try:
            for queue in settings.CELERY_TASK_QUEUES:
                # kombu keeps one list per priority step: "crawl", then "crawl\x06\x163", ...
                keys = [f"{prefix}{queue.name}"] + [f"{prefix}{queue.name}\x06\x16{p}" for p in range(1, 10)]
                family.add_metric([queue.name], sum(client.llen(key) for key in keys))
        except redis.RedisError:
            return
        finally:
            client.close()
        yield family

    def _sources_syncing(self) -> Iterator[GaugeMetricFamily]:
        from django.db import DatabaseError
        from django.db.models import Count

        from sources.models import Source, Status

        family = GaugeMetricFamily(
            "grounded_sources_syncing", "Sources being crawled or indexed, by status.", labels=["status"]
        )
        in_flight = [Status.PENDING, Status.CRAWLING, Status.INDEXING]
        try:
            # Operators' view across every workspace, on purpose.
            rows = Source.unscoped.filter(status__in=in_flight).values("status").annotate(n=Count("id"))
            counts = {row["status"]: row["n"] for row in rows}
        except DatabaseError:
            return
        for status in in_flight:
            family.add_metric([str(status)], counts.get(status, 0))
        yield family


def registry() -> CollectorRegistry:
    """What a scrape reports: every process's files in multiprocess mode, this process's otherwise."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        scrape = CollectorRegistry()
        multiprocess.MultiProcessCollector(scrape)
    else:
        scrape = CollectorRegistry()
        scrape.register(_DefaultRegistryView())
    scrape.register(DeploymentCollector())
    return scrape


class _DefaultRegistryView:
    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = getattr(settings, "METRICS_TOKEN", "")
    if not token:
        raise Http404("Metrics are not enabled.")
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(given.encode(), token.encode()):
        return HttpResponse("A valid bearer token is required.", status=401, content_type="text/plain")
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


# --- Celery ---------------------------------------------------------------------------------------


def connect_celery_signals() -> None:
    from celery import signals

    started: dict[str, float] = {}

    @signals.task_prerun.connect(weak=False)
    def _prerun(task_id: str, task: Any, **_: Any) -> None:
        started[task_id] = time.perf_counter()

    @signals.task_postrun.connect(weak=False)
    def _postrun(task_id: str, task: Any, state: str | None = None, **_: Any) -> None:
        begun = started.pop(task_id, None)
        if begun is not None:
            TASK_SECONDS.labels(task=task.name).observe(time.perf_counter() - begun)
        if state == "SUCCESS":
            TASKS.labels(task=task.name, outcome="success", failure_class="").inc()

    @signals.task_failure.connect(weak=False)
    def _failure(sender: Any = None, exception: BaseException | None = None, **_: Any) -> None:
        name = getattr(sender, "name", "unknown")
        TASKS.labels(task=name, outcome="failure", failure_class=type(exception).__name__).inc()

    @signals.task_retry.connect(weak=False)
    def _retry(sender: Any = None, reason: Any = None, **_: Any) -> None:
        name = getattr(sender, "name", "unknown")
        failure = type(reason).__name__ if isinstance(reason, BaseException) else "retry"
        TASKS.labels(task=name, outcome="retry", failure_class=failure).inc()

    @signals.worker_process_shutdown.connect(weak=False)
    def _process_gone(pid: int | None = None, **_: Any) -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            multiprocess.mark_process_dead(pid or os.getpid())

    @signals.worker_ready.connect(weak=False)
    def _serve(**_: Any) -> None:
        port = int(getattr(settings, "WORKER_METRICS_PORT", 0) or 0)
        if port:
            from prometheus_client import start_http_server

            start_http_server(port, registry=registry())
