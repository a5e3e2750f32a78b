"""A fetching source's crawl backlog: the ids of its pages still to publish, in order (a Redis list).

Pages are published from here a small wave at a time (ingestion.lifecycle.pump_pages) instead of all at
once: Celery hands countdown/ETA messages to a worker regardless of its prefetch limit, so publishing a
whole sitemap at once let one worker hoard it, and that worker's death stalled the crawl until the broker
gave the messages back. The list is only an order of work; the database stays the truth (a page is
published only if its row still says pending and unpublished), so a stale or duplicate id is harmless,
and the sweeper puts back what a lost list forgot.
"""

from __future__ import annotations

import redis
from django.conf import settings

# A backlog no pump has read for this long belongs to a source long gone.
BACKLOG_TTL_S = 7 * 24 * 3600


def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def _key(source_id: int) -> str:
    return f"{settings.REDIS_KEY_PREFIX}crawl:backlog:{int(source_id)}"


def push(source_id: int, document_ids: list[int]) -> None:
    if not document_ids:
        return
    key = _key(source_id)
    pipe = _redis().pipeline()
    pipe.rpush(key, *document_ids)
    pipe.expire(key, BACKLOG_TTL_S)
    pipe.execute()


def pop(source_id: int, count: int) -> list[int]:
    if count <= 0:
        return []
    return [int(i) for i in _redis().lpop(_key(source_id), count) or []]


def members(source_id: int) -> set[int]:
    return {int(i) for i in _redis().lrange(_key(source_id), 0, -1)}


def clear(source_id: int) -> None:
    _redis().delete(_key(source_id))
