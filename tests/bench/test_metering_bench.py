"""What metering costs per event: sources.metering.take (one conditional UPDATE on a PostgreSQL row, the
chosen design) beside a Redis INCR + EXPIRE (the alternative: counters in Redis, flushed to PostgreSQL
later), in the same run; and what the quota checks in front of a source's creation cost."""

from __future__ import annotations

import json
import os
import statistics
import time

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction

from sources import metering, quotas
from sources.models import Document, Plan, Source
from sources.plans import assign_plan
from sources.tenancy import workspace_scope

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]
EVENTS = int(os.environ.get("GROUNDED_BENCH_METERING_EVENTS", "2000"))


def _per_event_us(run, events: int) -> dict:
    samples = []
    for _ in range(3):  # three rounds; the median and best say more than one on a shared machine
        started = time.perf_counter()
        for _ in range(events):
            run()
        samples.append((time.perf_counter() - started) / events * 1e6)
    return {"median_us": round(statistics.median(samples), 1), "best_us": round(min(samples), 1)}


def test_metering_cost_per_event_beside_a_redis_counter(workspace, agent):
    Plan.objects.create(name="metered", max_chat_messages_per_month=10**9, max_sources=10**6)
    assign_plan(workspace, "metered")
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = f"{settings.REDIS_KEY_PREFIX}bench-meter"

    def redis_incr() -> None:
        client.pipeline().incr(key).expire(key, 3600).execute()

    def pg_take() -> None:
        metering.take(workspace_id=workspace.id, metric="chat_messages", amount=1, limit=10**9)

    def quota_take() -> None:  # what a chat turn pays: the plan lookup and the take
        quotas.take(workspace, "chat_messages", 1)

    with workspace_scope(workspace.id):  # a workspace with some content, for the stock checks
        source = Source.objects.create(agent=agent, kind="text", title="t", chunks_count=5)
        Document.objects.bulk_create(
            [Document(workspace=workspace, source=source, text="x" * 2000) for _ in range(2000)]
        )

    def create_checks() -> None:  # as source_create runs them: inside its transaction, holding the workspace
        with transaction.atomic():
            quotas.check_sources_create(workspace, incoming_bytes=500, fetches=True)

    result = {
        "benchmark": "metering_per_event",
        "events": EVENTS,
        "postgresql_take": _per_event_us(pg_take, EVENTS),
        "redis_incr_expire": _per_event_us(redis_incr, EVENTS),
        "quota_take_with_plan_lookup": _per_event_us(quota_take, EVENTS),
        "checks_before_a_source_create_2000_documents": _per_event_us(create_checks, 200),
        "postgres": connection.pg_version,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    client.delete(key)
    print(json.dumps(result))
    assert metering.used(workspace_id=workspace.id, metric="chat_messages") == 3 * EVENTS * 2
