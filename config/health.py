"""Liveness and readiness.

`/healthz` says the process answers and nothing more, so an orchestrator restarts only a wedged process,
never a healthy one whose database is briefly away. `/readyz` says whether this deployment can do its work:
PostgreSQL reachable and migrated, Redis (cache and rate limits), the Celery broker, the vector store, and
at least one worker consuming each queue. Each check is bounded (about a second) and they run side by side,
so a dead dependency makes the answer slow by one timeout, not by the sum of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from urllib.parse import urlsplit

import psycopg
import redis
from django.conf import settings
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse

CHECK_TIMEOUT = 1.0  # seconds, for each network check and for the worker broadcast
# The whole answer's bound: a check that has not finished by then is reported as failed. Above CHECK_TIMEOUT
# because a process's first check also imports and builds its clients (Qdrant's takes seconds on a busy host).
READY_DEADLINE = 5.0

_migrated = False  # once the schema is at the head of the code's migrations it stays there


class CheckFailed(Exception):
    """A dependency answered, but not as it should (e.g. migrations pending)."""


def healthz(_request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(_request: HttpRequest) -> JsonResponse:
    report = readiness()
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)


def readiness() -> dict[str, Any]:
    """{"status": "ok"|"fail", "checks": {name: {"ok": bool, "error"?: str, "ms": int}}, "failed": [...]}."""
    checks: dict[str, Callable[[], Any]] = {
        "redis": check_redis,
        "broker": check_broker,
        "vector_store": check_vector_store,
        "workers": check_workers,
    }
    results: dict[str, dict[str, Any]] = {}
    pool = ThreadPoolExecutor(max_workers=len(checks), thread_name_prefix="readyz")
    started = {name: time.monotonic() for name in checks}
    futures = {name: pool.submit(_closing_db, check) for name, check in checks.items()}
    # The database check runs here, on this request's own connection.
    results["database"] = _run(check_database, time.monotonic())
    for name, future in futures.items():
        remaining = max(0.0, started[name] + READY_DEADLINE - time.monotonic())
        try:
            detail = future.result(timeout=remaining)
            results[name] = {"ok": True, **(detail or {})}
        except FutureTimeout:
            results[name] = {"ok": False, "error": "no answer in time"}
        except Exception as exc:
            results[name] = {"ok": False, "error": _describe(exc)}
        results[name]["ms"] = int((time.monotonic() - started[name]) * 1000)
    pool.shutdown(wait=False, cancel_futures=True)
    failed = sorted(name for name, result in results.items() if not result["ok"])
    return {"status": "fail" if failed else "ok", "failed": failed, "checks": results}


def _run(check: Callable[[], Any], started: float) -> dict[str, Any]:
    try:
        result = {"ok": True, **(check() or {})}
    except Exception as exc:
        result = {"ok": False, "error": _describe(exc)}
    result["ms"] = int((time.monotonic() - started) * 1000)
    return result


def _closing_db(check: Callable[[], Any]) -> Any:
    # A check that touches the ORM from a pool thread opens that thread's own connection; close it.
    try:
        return check()
    finally:
        connections.close_all()


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_database() -> dict[str, Any]:
    global _migrated
    # Reachability on a connection of its own, with a short timeout: the app's pool would make a dead server
    # wait for DATABASE_POOL_TIMEOUT instead.
    db = connection.settings_dict
    with psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        connect_timeout=max(1, int(CHECK_TIMEOUT)),
    ) as probe:
        probe.execute("SELECT 1")
    if not _migrated:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            names = ", ".join(f"{m.app_label}.{m.name}" for m, _backwards in pending[:5])
            raise CheckFailed(f"{len(pending)} migration(s) not applied: {names}")
        _migrated = True
    return {}


def _ping_redis(url: str) -> None:
    client = redis.Redis.from_url(url, socket_timeout=CHECK_TIMEOUT, socket_connect_timeout=CHECK_TIMEOUT)
    try:
        client.ping()
    finally:
        client.close()


def check_redis() -> dict[str, Any]:
    _ping_redis(settings.REDIS_URL)
    return {}


def check_broker() -> dict[str, Any]:
    url = settings.CELERY_BROKER_URL
    if urlsplit(url).scheme in ("redis", "rediss"):
        _ping_redis(url)
        return {}
    from config.celery import app

    with app.connection_for_write() as conn:
        # kombu compares the timeout with elapsed seconds (a float); celery-types declare it int.
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT)  # type: ignore[arg-type]
    return {}


def check_vector_store() -> dict[str, Any]:
    from config.backends import vector_stores

    # A count in a workspace that cannot exist: goes through the store's own client and scoping, cheaply.
    vector_stores["default"].count(workspace_id=0)
    return {}


def required_queues() -> list[str]:
    return sorted(queue.name for queue in settings.CELERY_TASK_QUEUES)


def check_workers() -> dict[str, Any]:
    """At least one worker consuming each queue answers within the timeout (one broadcast)."""
    from config.celery import app

    replies = app.control.inspect(timeout=CHECK_TIMEOUT).active_queues() or {}
    consumers: dict[str, list[str]] = {name: [] for name in required_queues()}
    for worker, queues in replies.items():
        for queue in queues or []:
            if queue.get("name") in consumers:
                consumers[queue["name"]].append(worker)
    missing = [name for name, workers in consumers.items() if not workers]
    if missing:
        raise CheckFailed(f"no worker answered for queue(s): {', '.join(missing)}")
    return {"queues": {name: len(workers) for name, workers in consumers.items()}}
