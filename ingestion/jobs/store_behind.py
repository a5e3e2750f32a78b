"""An index job stores the documents it has embedded while it embeds the next ones.

An index job embedded every chunk it had claimed, then stored each document (its chunks, vectors, keyword
postings and status, in one transaction each): the embedder sat idle through the whole store, a share of
a crawl's wall time on 2 cores, and the job's last store was the crawl's tail (docs/BENCHMARKS.md, "Crawl +
index end to end"). So the job embeds in parts (one embedder call each, ingestion/indexing.py) and hands
each document the parts make whole to one thread of the process that stores it, while the job's own thread
embeds the next part (ONNX and the database driver release the GIL); the job ends when its last document
is stored.

Storing happens on that thread's own database connection, so it can only see committed rows: a caller
inside a transaction (a test's, or a service that wraps indexing in one) stores in its own thread, as
before. The thread's connection is checked before each part (replaced if PostgreSQL dropped it, as at the
start of a request) and given back after it when connections are not kept (DATABASE_CONN_MAX_AGE=0).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future

from django.db import connection

from config.pool_threads import LazyPool, connection_checked

# One thread: parts are stored in the order they were embedded, one transaction at a time.
_thread = LazyPool(lambda: 1, "index-store")


def _store_part(store: Callable[[], None]) -> None:
    with connection_checked():
        store()


class StoreBehind:
    """Parts handed over in order; `wait()` returns once every one is stored (re-raising what failed)."""

    def __init__(self) -> None:
        # Another connection cannot see a transaction's uncommitted rows: store in this thread then.
        self.inline = connection.in_atomic_block
        self._pending: list[Future[None]] = []

    def submit(self, store: Callable[[], None]) -> None:
        if self.inline:
            store()
            return
        # The workspace scope (a context variable) goes with the part.
        context = contextvars.copy_context()
        self._pending.append(_thread().submit(context.run, _store_part, store))

    def wait(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()
