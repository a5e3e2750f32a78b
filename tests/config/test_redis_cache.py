"""The cache backend: Django's Redis cache, with connection pools and clients shared by the process."""

from __future__ import annotations

import contextvars
import threading

import redis
from django.core.cache import cache, caches
from django.test import override_settings


def _backend_in_a_new_context():
    """What a request under the router gets: a context of its own, so a backend of its own."""
    return contextvars.Context().run(lambda: caches["default"])


def test_the_cache_reuses_its_client_and_works_across_threads():
    cache.set("redis-cache-test", {"a": 1}, timeout=30)
    client = cache._cache.get_client(write=True)
    assert cache._cache.get_client(write=True) is client  # Django's own makes a new one per call
    assert cache.get_many(["redis-cache-test", "missing"]) == {"redis-cache-test": {"a": 1}}

    seen = []

    def other_thread():
        own = caches["default"]
        seen.append((own.get("redis-cache-test"), own._cache.get_client(write=True) is client))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [({"a": 1}, True)]
    cache.delete("redis-cache-test")


def test_a_backend_made_for_each_request_reuses_the_first_ones_connection():
    """Django makes a backend per context; each would have opened its own pool and a new connection."""
    cache.set("redis-cache-test", 1, timeout=30)
    pool = cache._cache._get_connection_pool(True)
    backends = [_backend_in_a_new_context() for _ in range(20)]
    assert len({id(b) for b in backends}) == 20 and all(b is not cache for b in backends)
    opened_before = redis.Redis(connection_pool=pool).info("stats")["total_connections_received"]
    for backend in backends:
        assert backend.get("redis-cache-test") == 1
        assert backend._cache._get_connection_pool(True) is pool
    opened = redis.Redis(connection_pool=pool).info("stats")["total_connections_received"] - opened_before
    assert opened == 0
    cache.delete("redis-cache-test")


def test_another_server_gets_its_own_pool(settings):
    location = settings.CACHES["default"]["LOCATION"]
    other = {**settings.CACHES["default"], "LOCATION": location.rsplit("/", 1)[0] + "/13"}
    with override_settings(CACHES={**settings.CACHES, "other": other}):
        theirs = caches["other"]._cache._get_connection_pool(True)
        assert theirs is not cache._cache._get_connection_pool(True)
