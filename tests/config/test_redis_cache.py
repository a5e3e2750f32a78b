"""The cache backend: Django's Redis cache, reusing one client per connection pool."""

from __future__ import annotations

import threading

from django.core.cache import cache, caches


def test_the_cache_reuses_its_client_and_works_across_threads():
    cache.set("redis-cache-test", {"a": 1}, timeout=30)
    client = cache._cache.get_client(write=True)
    assert cache._cache.get_client(write=True) is client  # Django's own makes a new one per call
    assert cache.get_many(["redis-cache-test", "missing"]) == {"redis-cache-test": {"a": 1}}

    seen = []

    def other_thread():  # caches are per thread; each thread's backend has its own pool and client
        own = caches["default"]
        seen.append((own.get("redis-cache-test"), own._cache.get_client(write=True) is client))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [({"a": 1}, False)]
    cache.delete("redis-cache-test")
