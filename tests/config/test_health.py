"""/healthz and /readyz: each dependency down in turn names what failed.

A dependency is "down" by pointing its setting at a closed port on 127.0.0.1, in a separate process
(settings are read once per process). Those processes use `config.settings.local`, whose broker has no key
prefix, so no test worker (they all use a per-session prefix) answers them: "workers" fails there too, which
is itself the no-worker case.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.conf import settings
from django.test import Client

from tests.factories import ROOT


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed once the socket is


@pytest.mark.django_db
def test_healthz_answers_without_touching_a_dependency(django_assert_num_queries):
    with django_assert_num_queries(0):  # liveness must not depend on anything outside the process
        response = Client(HTTP_HOST="localhost").get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.worker
@pytest.mark.django_db
def test_readyz_is_ok_with_every_dependency_up_and_a_worker_per_queue(celery_worker):
    response = Client(HTTP_HOST="localhost").get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok" and body["failed"] == []
    assert set(body["checks"]) == {"database", "redis", "broker", "vector_store", "workers"}
    assert body["checks"]["workers"]["queues"] == {"crawl": 1, "index": 1, "interactive": 1}


def _test_database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def _redis_server() -> str:
    return settings.REDIS_URL.rsplit("/", 1)[0]


SCRIPT = (
    "import json, django; django.setup(); from config.health import readiness; print(json.dumps(readiness()))"
)


def _start(**overrides: str) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=_test_database_url(),
        REDIS_URL=f"{_redis_server()}/15",
        CELERY_BROKER_URL=f"{_redis_server()}/14",
        VECTOR_STORE_BACKEND="retrieval.stores.pgvector.PgVectorStore",
        LOG_LEVEL="CRITICAL",
    )
    env.update(overrides)
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _report(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


@pytest.fixture
def empty_database(django_db_setup):
    """A database with pgvector but no migrations applied."""
    name = f"test_grounded_empty_{uuid.uuid4().hex[:8]}"
    db = settings.DATABASES["default"]
    admin = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_readyz_names_each_dependency_that_is_down(django_db_setup, empty_database):
    port = closed_port()
    # All at once: each is a separate Django process, and most of their time is start-up.
    scenarios = {
        "no worker": _start(),
        "postgres down": _start(DATABASE_URL=f"postgres://postgres@127.0.0.1:{port}/grounded"),
        "redis down": _start(REDIS_URL=f"redis://127.0.0.1:{port}/0"),
        "broker down": _start(CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0"),
        "vector store down": _start(
            VECTOR_STORE_BACKEND="retrieval.stores.qdrant.QdrantStore", QDRANT_URL=f"http://127.0.0.1:{port}"
        ),
        "not migrated": _start(DATABASE_URL=empty_database),
    }
    reports = {name: _report(process) for name, process in scenarios.items()}

    no_worker = reports["no worker"]
    assert no_worker["status"] == "fail" and no_worker["failed"] == ["workers"], no_worker
    assert "crawl, index" in no_worker["checks"]["workers"]["error"]

    # A broker that is down takes the worker check with it; a store in PostgreSQL, the vector store.
    expected = {
        "postgres down": ["database", "vector_store", "workers"],
        "redis down": ["redis", "workers"],
        "broker down": ["broker", "workers"],
        "vector store down": ["vector_store", "workers"],
        "not migrated": ["database", "vector_store", "workers"],
    }
    for name, failed in expected.items():
        assert reports[name]["failed"] == failed, (name, reports[name])
        assert reports[name]["status"] == "fail"
    checks = {name: report["checks"] for name, report in reports.items()}
    assert "OperationalError" in checks["postgres down"]["database"]["error"]
    assert "ConnectionError" in checks["redis down"]["redis"]["error"]
    assert "ConnectionError" in checks["broker down"]["broker"]["error"]
    assert "Qdrant" in checks["vector store down"]["vector_store"]["error"]
    assert "migration(s) not applied" in checks["not migrated"]["database"]["error"]
    for report in reports.values():
        # Bounded: a dead dependency costs about one timeout, not the sum of them.
        assert all(check["ms"] < 6000 for check in report["checks"].values()), report
