"""Per-host slots, across all crawl workers (Redis): at most N pages of one host at once, requests spaced
by the site's robots.txt Crawl-delay, and, for a page that can't start now, the time its turn should come.

Each host keeps leases (a sorted set: lease id -> start time, so a crashed worker's lease expires), the
earliest time the next page may start, and a running average of how long a page takes. A page that can't
start reserves the next start time and waits until then: the waiting pages of a busy host line up one
interval apart instead of all asking again every few seconds. A reservation too far ahead is not made; the
page asks again after the longest wait the caller allows.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import redis
from django.conf import settings

# A lease whose worker died is given back after this long, so a crash cannot block a host for good.
SLOT_TTL_S = 300
# How long a page takes before we have measured any on this host.
DEFAULT_PAGE_SECONDS = 1.0
# A reservation is honoured this long after its time (the broker and the worker add some delay).
RESERVATION_GRACE_S = 30.0
# A wait this short is slept in the worker rather than sent back through the broker: a page woken a little
# before its reserved time must not start early (Crawl-delay is a floor), nor lose its place in the line.
SLEEP_IN_PLACE_S = 0.5

_ACQUIRE = """
local now, limit, delay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl, lease, reserved = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local min_wait, max_wait, grace = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
local held = redis.call('ZCARD', KEYS[1])
local next_at = tonumber(redis.call('GET', KEYS[2]) or '0')
if reserved > now and reserved - now <= max_wait then
  -- Woken before the reserved time (a countdown is not exact): keep the reservation, wait the rest.
  return {0, tostring(reserved - now), tostring(reserved)}
end
local my_turn = reserved > 0 and now - reserved <= grace
if held < limit and (my_turn or next_at <= now) then
  redis.call('ZADD', KEYS[1], now, lease)
  redis.call('EXPIRE', KEYS[1], ttl)
  if delay > 0 and next_at < now + delay then
    redis.call('SET', KEYS[2], tostring(now + delay), 'EX', math.ceil(delay + max_wait))
  end
  return {1, '0', '0'}
end
local avg = tonumber(redis.call('GET', KEYS[3]) or ARGV[10])
local interval = math.max(delay, avg / limit)
local start = math.max(next_at, now + min_wait)
if start - now > max_wait then
  return {0, tostring(max_wait), '0'}
end
redis.call('SET', KEYS[2], tostring(start + interval), 'EX', math.ceil(start + interval - now + max_wait))
return {0, tostring(start - now), tostring(start)}
"""

_RELEASE = """
local started = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if started then
  local took = tonumber(ARGV[2]) - tonumber(started)
  local avg = tonumber(redis.call('GET', KEYS[3]) or tostring(took))
  redis.call('SET', KEYS[3], tostring(avg * 0.8 + took * 0.2), 'EX', 3600)
end
return 1
"""


@dataclass(frozen=True)
class Slot:
    """`lease` when the page may go now (give it back with release); else wait `wait` seconds, and come back
    with `reserved_at` (the start time reserved for it, 0 when none was)."""

    lease: str | None
    wait: float = 0.0
    reserved_at: float = 0.0

    @property
    def granted(self) -> bool:
        return self.lease is not None


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def _keys(url: str) -> list[str]:
    base = f"{settings.REDIS_KEY_PREFIX}crawl:host:{(urlsplit(url).hostname or '').lower()}"
    return [f"{base}:leases", f"{base}:next", f"{base}:avg"]


def acquire(url: str, *, crawl_delay: float = 0.0, reserved_at: float = 0.0, max_wait: float = 600.0) -> Slot:
    """A slot for one page of url's host, or how long to wait for one (never longer than max_wait)."""
    slot = _ask(url, crawl_delay=crawl_delay, reserved_at=reserved_at, max_wait=max_wait)
    if not slot.granted and slot.reserved_at and slot.wait <= SLEEP_IN_PLACE_S:
        time.sleep(slot.wait)
        slot = _ask(url, crawl_delay=crawl_delay, reserved_at=slot.reserved_at, max_wait=max_wait)
    return slot


def _ask(url: str, *, crawl_delay: float, reserved_at: float, max_wait: float) -> Slot:
    lease = uuid.uuid4().hex
    granted, wait, reserved = _redis().eval(
        _ACQUIRE,
        3,
        *_keys(url),
        repr(time.time()),
        settings.CRAWL_PER_HOST_CONCURRENCY,
        repr(float(crawl_delay)),
        SLOT_TTL_S,
        lease,
        repr(float(reserved_at)),
        repr(float(settings.CRAWL_HOST_WAIT_SECONDS)),
        repr(float(max_wait)),
        repr(RESERVATION_GRACE_S),
        repr(DEFAULT_PAGE_SECONDS),
    )
    if int(granted) == 1:
        return Slot(lease=lease)
    return Slot(lease=None, wait=float(wait), reserved_at=float(reserved))


def release(url: str, lease: str) -> None:
    _redis().eval(_RELEASE, 3, *_keys(url), lease, repr(time.time()))


def forget(url: str) -> None:
    """Drop a host's leases and reservations (tests start each site from a clean slate)."""
    _redis().delete(*_keys(url))
