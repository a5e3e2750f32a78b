"""The API key rows a web process keeps (sources/key_rows.py): a kept key costs no query, and any committed
change to a key or a workspace, however it is written, is seen by the next requests. Committed rows
(transaction=True): PostgreSQL notifies only on commit, as in production."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sources import key_rows
from sources.access import api_key_revoke
from sources.models import ApiKey, Membership, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)

#: how long another process's change may take to reach this process's listener, at most, in these tests
DELIVERY_S = 5.0


@pytest.fixture(autouse=True)
def kept_rows(settings, monkeypatch):
    settings.API_KEY_CACHE = True
    settings.API_KEY_CACHE_SECONDS = 60.0
    monkeypatch.setattr(key_rows, "RETRY_SECONDS", 0.1)
    key_rows.rows.forget_all()
    assert key_rows.rows.wait_until_listening(), "the listener did not connect"
    yield key_rows.rows
    key_rows.rows.stop()  # the test database cannot be dropped while it holds a connection


def _elsewhere(sql: str, values: list | None = None) -> None:
    """A write by another process: its own connection, committed."""
    params = {**key_rows._listen_params(), "application_name": "another process"}
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute(sql, values or [])


def _key_lookups(queries: CaptureQueriesContext) -> int:
    return sum(1 for q in queries.captured_queries if ApiKey._meta.db_table in q["sql"])


def _until(check, timeout: float = DELIVERY_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_a_kept_key_is_used_without_a_query(api):
    assert api.get("/api/v1/workspace").status_code == 200  # read, kept, last use written
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/v1/workspace").status_code == 200
    assert len(queries.captured_queries) == 0, [q["sql"] for q in queries.captured_queries]


def test_writing_the_last_use_does_not_forget_the_rows(api, kept_rows):
    ApiKey.unscoped.update(last_used_at=None)
    api.get("/api/v1/workspace")  # writes last_used_at: a column the trigger leaves out
    time.sleep(0.3)  # a notification, had one been sent, would have arrived
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/v1/workspace").status_code == 200
    assert _key_lookups(queries) == 0


def test_a_key_revoked_by_another_process_is_refused(api):
    assert api.get("/api/v1/workspace").status_code == 200
    _elsewhere("UPDATE sources_apikey SET revoked_at = now()")
    assert _until(lambda: api.get("/api/v1/workspace").status_code == 401)
    assert api.get("/api/v1/workspace").status_code == 401


def test_a_key_revoked_here_is_refused_by_the_next_request(api, workspace, owner):
    assert api.get("/api/v1/workspace").status_code == 200
    actor = Membership.unscoped.get(user=owner, workspace=workspace)
    api_key_revoke(actor=actor, api_key=ApiKey.unscoped.get(workspace=workspace))
    assert api.get("/api/v1/workspace").status_code == 401  # no waiting for the notification


def test_a_key_deleted_elsewhere_is_refused(api):
    assert api.get("/api/v1/workspace").status_code == 200
    _elsewhere("DELETE FROM sources_apikey")
    assert _until(lambda: api.get("/api/v1/workspace").status_code == 401)


def test_a_workspace_changed_by_a_queryset_update_elsewhere_is_seen(api, workspace):
    assert api.get("/api/v1/workspace").json()["bm25_k1"] != 0.5
    _elsewhere("UPDATE sources_workspace SET bm25_k1 = 0.5 WHERE id = %s", [workspace.id])
    assert _until(lambda: api.get("/api/v1/workspace").json()["bm25_k1"] == 0.5)


def test_a_row_read_before_a_change_is_not_kept_after_it(kept_rows):
    epoch = kept_rows.epoch()
    kept_rows.forget_all()  # a notification arrived while the row was being read
    kept_rows.keep("abcd1234", ("row",), None, epoch)
    assert kept_rows.get("abcd1234") is None
    kept_rows.keep("abcd1234", ("row",), None, kept_rows.epoch())
    assert kept_rows.get("abcd1234") is not None


def test_without_its_listener_a_process_reads_every_key(api, kept_rows):
    api.get("/api/v1/workspace")
    _elsewhere(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        ["grounded-api-key-listener"],
    )
    assert _until(lambda: not kept_rows.listening)
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/v1/workspace").status_code == 200
    assert _key_lookups(queries) == 1  # read, whatever was kept before
    assert kept_rows.wait_until_listening()  # started again
    api.get("/api/v1/workspace")
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/v1/workspace").status_code == 200
    assert _key_lookups(queries) == 0


def test_rows_older_than_their_lifetime_are_read_again(api, settings):
    settings.API_KEY_CACHE_SECONDS = 0.0
    api.get("/api/v1/workspace")
    with CaptureQueriesContext(connection) as queries:
        api.get("/api/v1/workspace")
    assert _key_lookups(queries) == 1


def test_off_every_request_reads_its_key(api, settings):
    settings.API_KEY_CACHE = False
    api.get("/api/v1/workspace")
    with CaptureQueriesContext(connection) as queries:
        api.get("/api/v1/workspace")
    assert _key_lookups(queries) == 1


def test_a_kept_key_reaches_only_its_own_workspace(api, outsider_api, workspace, agent):
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="Returns", status="done")
    for _ in range(2):  # read, then kept
        assert api.get(f"/api/v1/sources/{source.id}").status_code == 200
        assert outsider_api.get(f"/api/v1/sources/{source.id}").status_code == 404
