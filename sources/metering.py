"""Metered quotas: what a workspace used in the current period (crawl pages per UTC day, chat messages per
UTC month), kept as one PostgreSQL row per workspace, metric and period.

Each event is one conditional UPDATE that adds only what the limit leaves room for and says how much it
granted, so two processes racing for the last unit cannot both get it, and nothing is counted that was
refused. Rows rather than Redis counters flushed later: the count is the quota's truth, it survives a
Redis restart, and the bench (tests/bench/test_metering_bench.py) puts the cost per event beside a Redis
INCR; the events metered here (a crawl's fan-out, a chat turn) cost far more than either.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connection
from django.utils import timezone

from sources.models import UsageCounter
from sources.tenancy import workspace_scope

DAILY, MONTHLY = "day", "month"
#: metric -> the period it resets after.
METRICS = {"crawl_pages": DAILY, "chat_messages": MONTHLY}
UNLIMITED = 2**62


def period_bounds(metric: str, now: dt.datetime | None = None) -> tuple[dt.date, dt.datetime]:
    """The current period's first day and the moment the next one starts (UTC)."""
    now = (now or timezone.now()).astimezone(dt.UTC)
    if METRICS[metric] == DAILY:
        start = now.date()
        following = start + dt.timedelta(days=1)
    else:
        start = now.date().replace(day=1)
        following = (start + dt.timedelta(days=32)).replace(day=1)
    return start, dt.datetime.combine(following, dt.time(), tzinfo=dt.UTC)


def used(*, workspace_id: int, metric: str) -> int:
    start, _ = period_bounds(metric)
    with workspace_scope(workspace_id):
        value = UsageCounter.objects.filter(metric=metric, period_start=start).values_list("value", flat=True)
        return int(value.first() or 0)


_ENSURE = """
INSERT INTO sources_usagecounter (workspace_id, metric, period_start, value, updated_at)
VALUES (%(workspace)s, %(metric)s, %(start)s, 0, now())
ON CONFLICT (workspace_id, metric, period_start) DO NOTHING
"""
_TAKE = """
UPDATE sources_usagecounter AS c
SET value = c.value + LEAST(%(amount)s, GREATEST(%(limit)s - c.value, 0)), updated_at = now()
FROM (
    SELECT id, value FROM sources_usagecounter
    WHERE workspace_id = %(workspace)s AND metric = %(metric)s AND period_start = %(start)s
    FOR UPDATE
) AS before
WHERE c.id = before.id
RETURNING before.value, c.value
"""


def take(*, workspace_id: int, metric: str, amount: int, limit: int | None) -> tuple[int, int]:
    """Count up to `amount` units of `metric`, as many as `limit` leaves room for this period.
    Returns (granted, used before): granted < amount means the quota stopped it."""
    if amount <= 0:
        return 0, used(workspace_id=workspace_id, metric=metric)
    start, _ = period_bounds(metric)
    params: dict[str, Any] = {
        "workspace": workspace_id,
        "metric": metric,
        "start": start,
        "amount": amount,
        "limit": UNLIMITED if limit is None else limit,
    }
    with connection.cursor() as cursor:
        cursor.execute(_ENSURE, params)
        cursor.execute(_TAKE, params)
        before, after = cursor.fetchone()
    return int(after - before), int(before)
