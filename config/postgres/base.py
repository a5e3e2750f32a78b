"""Django's PostgreSQL backend, with a health check that costs no round trip on a connection that is fine.

Django checks a kept connection (CONN_HEALTH_CHECKS) before a request's first query by sending `SELECT 1`:
a round trip to PostgreSQL on every request, a visible share of a cached search (docs/BENCHMARKS.md). Between
queries an idle connection has nothing to read. When PostgreSQL drops it (a restart, a terminated backend,
an idle timeout) the server says so and closes the socket, which makes it readable. So a connection with
nothing to read is usable as it stands; one with something pending (that goodbye, or a rare asynchronous
notice) gets Django's `SELECT 1`, and is replaced if that fails. A connection psycopg already knows is
closed or broken is replaced at once.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


def has_pending_input(fileno: int) -> bool:
    """Whether the socket has bytes, an end of stream or an error waiting, without waiting for any. poll,
    not select: a busy server's sockets can have descriptors above select's limit of 1024."""
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return bool(poller.poll(0))


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            pending = has_pending_input(connection.fileno())
        except (OSError, ValueError):  # no socket any more
            return False
        return super().is_usable() if pending else True
