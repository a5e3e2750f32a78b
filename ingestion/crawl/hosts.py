"""At most N pages of one host are fetched at once, across all crawl workers (Redis counters)."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

import redis
from django.conf import settings

# A slot whose worker died is given back after this long, so a crash cannot block a host for good.
SLOT_TTL_S = 300


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def _key(url: str) -> str:
    return f"{settings.REDIS_KEY_PREFIX}crawl:host:{(urlsplit(url).hostname or '').lower()}"


def acquire(url: str) -> bool:
    key = _key(url)
    pipe = _redis().pipeline()
    pipe.incr(key)
    pipe.expire(key, SLOT_TTL_S)
    count = pipe.execute()[0]
    if count > settings.CRAWL_PER_HOST_CONCURRENCY:
        _redis().decr(key)
        return False
    return True


def release(url: str) -> None:
    key = _key(url)
    if _redis().decr(key) < 0:
        _redis().set(key, 0, ex=SLOT_TTL_S)
