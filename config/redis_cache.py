"""Django's Redis cache, with connection pools and clients shared by the whole process.

Django keeps a cache backend per context, not per process (`caches` is a context-local). Under the
router (config/asgi.py) every request runs in a context of its own, so every request built a new backend,
a new connection pool and a new connection to Redis: a TCP connect and a handshake before its first cache
read, a visible share of a cached search (docs/BENCHMARKS.md). The pools here belong to the process, keyed
by their servers and options, so backends made for later requests reuse the first one's connections.

Django's client also makes a `redis.Redis` for every cache operation; building one fills its table of
response callbacks (hundreds of entries) each time. A client is only a handle on its pool and safe to
reuse, so it is made once per pool."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

#: (servers, pool class, options) -> {pool index: pool}, and {id(pool): client}: for the whole process.
#: redis-py's pools are thread-safe, and reset their connections in a forked child (Celery's workers).
_POOLS: dict[tuple, dict[int, Any]] = {}
_CLIENTS: dict[tuple, dict[int, Any]] = {}
_lock = threading.Lock()


class SharedPoolRedisCacheClient(RedisCacheClient):
    # Django's private attributes, which django-stubs leave out (annotations only: nothing is assigned here).
    _servers: list[str]
    _pool_class: Any
    _pool_options: dict[str, Any]
    _client: Any
    _serializer: Any
    _get_connection_pool_index: Callable[[bool], int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        key = (tuple(self._servers), self._pool_class, repr(sorted(self._pool_options.items())))
        with _lock:
            self._pools = _POOLS.setdefault(key, {})
            self._clients = _CLIENTS.setdefault(key, {})

    def _get_connection_pool(self, write: bool) -> Any:
        index = self._get_connection_pool_index(write)
        pool = self._pools.get(index)
        if pool is None:
            with _lock:  # two first requests at once: one pool
                pool = self._pools.get(index)
                if pool is None:
                    pool = self._pools[index] = self._pool_class.from_url(
                        self._servers[index], **self._pool_options
                    )
        return pool

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    # Django's private attributes, which django-stubs leave out (annotations only: nothing is assigned here).
    _servers: list[str]
    _cache: SharedPoolRedisCacheClient

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedPoolRedisCacheClient


@dataclass(frozen=True)
class Alongside:
    """Redis commands another part of a request sends in the same round trip as a cache read, and what to do
    with their replies, in order. `replies` runs before the read's values are used, and may raise: the
    search API counts a caller's rate (sources/api/throttling.py) in its cache lookup's round trip."""

    commands: list[tuple[Any, ...]]
    replies: Callable[[list[Any]], None]


def shares_redis_url() -> bool:
    """Whether the default cache lives on settings.REDIS_URL, where the app's own keys (rate limits) are."""
    default = caches["default"]
    return isinstance(default, RedisCache) and default._servers == [settings.REDIS_URL]


def get_many_alongside(keys: list[str], alongside: Alongside) -> dict[str, Any]:
    """The default cache's `get_many(keys)`, with `alongside`'s commands sent first in the same round trip
    (the cache must live on settings.REDIS_URL: `shares_redis_url`)."""
    default = cast(RedisCache, caches["default"])  # what shares_redis_url checked
    made = {default.make_and_validate_key(key): key for key in keys}
    client = default._cache.get_client(write=True)  # the commands may write; the primary answers the read too
    pipe = client.pipeline(transaction=False)
    for command in alongside.commands:
        pipe.execute_command(*command)
    if made:
        pipe.mget(list(made))
    replies = pipe.execute()
    alongside.replies(replies[: len(alongside.commands)])
    if not made:
        return {}
    loads = default._cache._serializer.loads
    values = replies[len(alongside.commands)]
    return {made[key]: loads(value) for key, value in zip(made, values, strict=True) if value is not None}
