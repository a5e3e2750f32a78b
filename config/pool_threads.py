"""Thread pools whose threads use the database: made on first use, one per purpose, for the process.

A pool thread is not a request, so nothing checks its connection for it: `connection_checked` does what
Django does around a request, for one unit of work on such a thread. The connection is checked first
(replaced if it is past its age or PostgreSQL dropped it), and given back afterwards when connections
are not kept (DATABASE_CONN_MAX_AGE=0: a pooled connection per unit), so a thread that lives as long as
the process neither holds a dead connection nor one it no longer needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from django.conf import settings
from django.db import close_old_connections, connections


class LazyPool:
    """`pool()` is the process's executor for this purpose, made on the first call (after a fork, in the
    process that uses it), with `workers()` threads."""

    def __init__(self, workers: Callable[[], int], prefix: str) -> None:
        self._workers = workers
        self._prefix = prefix
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def __call__(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self._workers(), thread_name_prefix=self._prefix
                )
            return self._executor


@contextmanager
def connection_checked() -> Iterator[None]:
    close_old_connections()
    try:
        yield
    finally:
        if not settings.DATABASES["default"].get("CONN_MAX_AGE"):
            connections.close_all()
