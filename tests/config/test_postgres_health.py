"""The database backend's health check: no round trip on a healthy kept connection, a dropped one replaced."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.db import connection

from config.postgres.base import DatabaseWrapper, has_pending_input


@pytest.fixture
def wrappers(django_db_setup, django_db_blocker) -> Iterator:
    """Kept connections of their own to the test database, checked as a web process checks its own."""
    made: list[DatabaseWrapper] = []

    def make() -> DatabaseWrapper:
        kept = {**connection.settings_dict, "CONN_HEALTH_CHECKS": True, "CONN_MAX_AGE": 60}
        wrapper = DatabaseWrapper(kept)
        wrapper.ensure_connection()
        made.append(wrapper)
        return wrapper

    with django_db_blocker.unblock():
        yield make
        for wrapper in made:
            wrapper.close()


def _last_query(observer: DatabaseWrapper, pid: int) -> str:
    with observer.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def _pid_after(kept: DatabaseWrapper, statement: str) -> int:
    """The connection's backend, after it ran `statement` (and asked for its pid, its last query)."""
    with kept.cursor() as cursor:
        cursor.execute(statement)
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _from_observer(observer: DatabaseWrapper, kept: DatabaseWrapper, statement: str, *args) -> None:
    """Run `statement` on the observer, then wait (5 s at most) for the kept connection to hear of it."""
    with observer.cursor() as cursor:
        cursor.execute(statement, list(args))
    deadline = time.monotonic() + 5
    while not has_pending_input(kept.connection.fileno()) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_healthy_connection_is_usable_without_a_query(wrappers):
    kept, observer = wrappers(), wrappers()
    pid = _pid_after(kept, "SELECT 'the last query before the check'")

    assert kept.is_usable()
    kept.health_check_done = False
    kept.close_if_health_check_failed()

    assert kept.connection is not None  # kept
    assert _last_query(observer, pid) == "SELECT pg_backend_pid()"  # no SELECT 1 reached the server


def test_a_connection_postgresql_dropped_is_replaced_before_the_request_uses_it(wrappers):
    kept, observer = wrappers(), wrappers()
    pid = _pid_after(kept, "SELECT 'a request'")
    _from_observer(observer, kept, "SELECT pg_terminate_backend(%s)", pid)

    assert not kept.is_usable()
    kept.health_check_done = False
    kept.close_if_health_check_failed()
    assert kept.connection is None  # closed, so the next query opens a new one

    with kept.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_a_connection_with_something_pending_is_asked(wrappers):
    """A notice waiting on a healthy connection: Django's SELECT 1 decides, and it is kept."""
    kept, observer = wrappers(), wrappers()
    pid = _pid_after(kept, "LISTEN grounded_health_test")
    _from_observer(observer, kept, "NOTIFY grounded_health_test")

    assert kept.is_usable()
    assert _last_query(observer, pid) == "SELECT 1"


def test_pending_input_is_seen_on_a_descriptor_above_select_s_limit():
    """A web process with many open sockets: select() refuses descriptors above 1024, poll does not."""
    import os
    import resource
    import socket

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= 1500:
        if hard != resource.RLIM_INFINITY and hard <= 1500:
            pytest.skip(f"this process may open {hard} descriptors at most")
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    ours, theirs = socket.socketpair()
    high = os.dup2(ours.fileno(), 1500)
    try:
        assert not has_pending_input(high)
        theirs.sendall(b"x")
        assert has_pending_input(high)
    finally:
        os.close(high)
        ours.close()
        theirs.close()
