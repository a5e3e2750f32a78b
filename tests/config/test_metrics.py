"""/metrics: the token, what a scrape reports, and worker metrics through multiprocess mode."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
import redis
from django.conf import settings
from django.test import Client, override_settings
from kombu import Queue
from prometheus_client import REGISTRY, CollectorRegistry, multiprocess
from prometheus_client.parser import text_string_to_metric_families

from tests.factories import ROOT, index_text, wait_for

TOKEN = "scrape-token-for-tests"


def scrape(client: Client) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def test_metrics_are_off_without_a_token_and_refuse_a_wrong_one(settings):
    client = Client(HTTP_HOST="localhost")
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401


@pytest.mark.django_db
def test_a_scrape_reports_request_latency_by_route_queue_depth_and_sources_syncing(
    settings, workspace, agent
):
    from sources.models import Source, Status

    settings.METRICS_TOKEN = TOKEN
    client = Client(HTTP_HOST="localhost")
    client.get("/healthz")
    Source.unscoped.create(workspace=workspace, agent=agent, kind="url", title="a", status=Status.CRAWLING)
    queue = f"metrics-test-{uuid.uuid4().hex[:6]}"
    prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "")
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.rpush(f"{prefix}{queue}", b"m1", b"m2", b"m3")
    try:
        with override_settings(CELERY_TASK_QUEUES=[Queue(queue)]):
            samples = scrape(client)
    finally:
        broker.delete(f"{prefix}{queue}")
    route = (("method", "GET"), ("route", "healthz"), ("status", "200"))
    assert samples[("grounded_http_request_duration_seconds_count", route)] >= 1
    assert samples[("grounded_queue_depth", (("queue", queue),))] == 3
    assert samples[("grounded_sources_syncing", (("status", "crawling"),))] == 1
    assert samples[("grounded_sources_syncing", (("status", "indexing"),))] == 0


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.django_db
def test_search_latency_by_mode_cache_hits_embedder_latency_and_chunks_embedded(workspace, agent):
    from retrieval.services import SearchParams, search_passages

    chunks_before = _value("grounded_chunks_embedded_total")
    embeds_before = _value("grounded_embedder_duration_seconds_count", purpose="documents")
    index_text(workspace, agent, "Returns", "Return any item within 30 days for a full refund.")
    assert _value("grounded_chunks_embedded_total") == chunks_before + 1
    assert _value("grounded_embedder_duration_seconds_count", purpose="documents") == embeds_before + 1

    hits, misses = (
        _value("grounded_semantic_cache_lookups_total", result="hit"),
        _value("grounded_semantic_cache_lookups_total", result="miss"),
    )
    searches = _value("grounded_search_duration_seconds_count", mode="keyword")
    for _ in range(2):  # the second, identical search is answered by the agent's semantic cache
        search_passages(
            workspace_id=workspace.id,
            query="how long to return",
            params=SearchParams(mode="keyword"),
            agent_id=agent.id,
        )
    assert _value("grounded_semantic_cache_lookups_total", result="miss") == misses + 1
    assert _value("grounded_semantic_cache_lookups_total", result="hit") == hits + 1
    assert _value("grounded_search_duration_seconds_count", mode="keyword") == searches + 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_worker_task_outcomes_reach_a_scrape_through_the_multiprocess_directory(tmp_path):
    """A real worker process records into PROMETHEUS_MULTIPROC_DIR; a scrape of that directory (what the
    web's /metrics does in compose, where the directory is shared) sees its task outcomes."""
    from celery import Celery

    run_id = (
        f"{settings.TEST_RUN_ID}m{uuid.uuid4().hex[:4]}"  # its own queues: no other worker takes the task
    )
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        GROUNDED_TEST_RUN=run_id,
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path),
    )
    log = (ROOT / ".local" / f"test-metrics-worker-{run_id}.log").open("w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "crawl,index,interactive",
         "--concurrency", "1", "-n", f"metrics-{run_id}@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    # Not the current app: shared tasks of later tests must keep resolving to config.celery.app.
    sender = Celery(broker=settings.CELERY_BROKER_URL, set_as_current=False)
    sender.conf.broker_transport_options = {"global_keyprefix": f"t{run_id}:"}
    try:
        sender.send_task("ingestion.tasks.crawl_sweep_stalled", queue="crawl")
        sender.send_task("ingestion.tasks.index_source", kwargs={"no_such_argument": 1}, queue="index")

        def outcomes() -> dict:
            scrape_registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(scrape_registry, path=str(tmp_path))
            found = {
                (s.labels.get("task"), s.labels.get("outcome"), s.labels.get("failure_class")): s.value
                for family in scrape_registry.collect()
                if family.name == "grounded_tasks"
                for s in family.samples
                if s.name == "grounded_tasks_total"
            }
            return found if len(found) >= 2 else None

        found = wait_for(outcomes, timeout=90, interval=0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        log.close()
    assert found[("ingestion.tasks.crawl_sweep_stalled", "success", "")] == 1
    assert found[("ingestion.tasks.index_source", "failure", "TypeError")] == 1
    assert any(name.startswith("counter_") for name in os.listdir(tmp_path))
