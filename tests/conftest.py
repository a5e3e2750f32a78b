"""Shared fixtures: two workspaces, people with each role, an outsider, API clients, a real worker.

Django is imported inside fixtures, so test modules that need no database can run without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.factories import ROOT, make_member

# One fake Notion per session, shared by the integration tests and the lanes benchmark; `broker`, what
# Celery publishes.
pytest_plugins = ["tests.fakes.fixtures", "tests.fakes.broker"]


@pytest.fixture
def workspace(db):
    from sources.models import Workspace

    return Workspace.objects.create(name="Acme", slug="acme")


@pytest.fixture
def other_workspace(db):
    from sources.models import Workspace

    return Workspace.objects.create(name="Globex", slug="globex")


@pytest.fixture
def owner(workspace):
    return make_member(workspace, "olivia", "owner")


@pytest.fixture
def member(workspace):
    return make_member(workspace, "mark", "member")


@pytest.fixture
def outsider(other_workspace):
    """Someone who belongs to another workspace only."""
    return make_member(other_workspace, "oscar", "owner")


@pytest.fixture
def agent(workspace):
    from agents.models import Agent
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        return Agent.objects.create(name="Support bot", allowed_origins=["https://acme.example"])


@pytest.fixture
def other_agent(other_workspace):
    from agents.models import Agent
    from sources.tenancy import workspace_scope

    with workspace_scope(other_workspace.id):
        return Agent.objects.create(name="Globex bot")


def _api_client(workspace):
    from rest_framework.test import APIClient

    from sources.services import api_key_create

    _key, raw = api_key_create(workspace=workspace, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def api(workspace):
    """An API client holding a key of `workspace`."""
    return _api_client(workspace)


@pytest.fixture
def outsider_api(other_workspace):
    """An API client holding a key of another workspace."""
    return _api_client(other_workspace)


@pytest.fixture(autouse=True)
def _empty_cache(request):
    """Each test starts with an empty cache (rate limits, semantic cache). The broker lives in another
    Redis database, so a running worker keeps its queues."""
    if request.config.pluginmanager.hasplugin("django"):
        import redis
        from django.conf import settings

        # Only this session's keys: another session may be using the same Redis database.
        client = redis.Redis.from_url(settings.REDIS_URL)
        for key in client.scan_iter(match=f"{settings.REDIS_KEY_PREFIX}*", count=1000):
            client.delete(key)
    yield


@pytest.fixture(autouse=True)
def _no_copy_built_past_the_test():
    """A search may start building a copy of the workspace's vectors on a thread of this process
    (retrieval/resident.py); it is finished, with its connection closed, before the rows are emptied, and
    no copy outlives the test."""
    yield
    from retrieval import resident

    resident.wait_for_builds()
    resident.forget_all()


#: Set once the session's worker runs: from then on it takes any job a test queues (see below).
_WORKER_STARTED = False


@pytest.fixture(autouse=True)
def _worker_done_with_the_test(request):
    """A test on the real worker leaves no job of its own behind: queued ones are dropped, held ones
    revoked, and a running one is waited for. Otherwise it runs on into the next test, against rows that
    test is removing (a job's commit and the next test's TRUNCATE deadlocked once in CI). Set up after
    the database fixtures, so this runs before the database is emptied."""
    yield
    # A test that commits rows (transactional) can queue work the session's worker, once started by an
    # earlier test, picks up although this test never asked for it: a source created through the API
    # queues its index job. The same teardown then applies (a flush deadlocked with such a job once).
    committed = any(m.kwargs.get("transaction") for m in request.node.iter_markers("django_db"))
    if "celery_worker" not in request.fixturenames and not (_WORKER_STARTED and committed):
        return
    import socket

    from config.celery import app

    worker = f"test-{os.getpid()}@{socket.gethostname()}"
    app.control.purge()
    inspect = app.control.inspect(destination=[worker], timeout=5, limit=1)
    held = [*(inspect.reserved() or {}).get(worker, []), *(inspect.scheduled() or {}).get(worker, [])]
    ids = [job.get("id") or job.get("request", {}).get("id") for job in held]
    if ids:
        app.control.revoke([i for i in ids if i], destination=[worker])
    started = time.monotonic()
    while (inspect.active() or {}).get(worker) and time.monotonic() < started + 60:
        time.sleep(0.1)
    waited = time.monotonic() - started
    if waited > 1:  # kept for whoever wonders where a slow run's time went
        with (ROOT / ".local" / "worker-teardown.log").open("a") as log:
            log.write(f"{request.node.nodeid}: waited {waited:.1f} s for the worker's last job\n")


@pytest.fixture(autouse=True)
def _no_api_key_listener_left():
    """A test that made this process listen for API key changes (sources/key_rows.py, with API_KEY_CACHE
    on) stops it after itself: the test database cannot be dropped while the listener holds a connection."""
    yield
    from sources import key_rows

    key_rows.rows.stop()


@pytest.fixture(scope="session", autouse=True)
def _remove_test_media():
    """Each run stores uploads in its own media folder (config/settings/test.py); none is of use once
    the run is over. The worker's log stays, for a run that failed."""
    yield
    import shutil

    from django.conf import settings

    if settings.configured:
        shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real Celery worker process consuming both queues, on the test database and test Redis."""
    import redis
    from django.conf import settings

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in broker.scan_iter(match=f"{settings.REDIS_KEY_PREFIX}*", count=1000):
        broker.delete(key)  # queues left by an earlier, interrupted run of this session id
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        GROUNDED_TEST_RUN=settings.TEST_RUN_ID,
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        PYTHONUNBUFFERED="1",
    )
    log_path = ROOT / ".local" / f"test-worker-{settings.TEST_RUN_ID}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "crawl,index,interactive",
            "--concurrency",
            "1",
            "-n",
            f"test-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    from config.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Celery worker exited early; see {log_path}")
        if app.control.ping(timeout=0.5):
            global _WORKER_STARTED
            _WORKER_STARTED = True
            break
    else:
        process.kill()
        raise RuntimeError(f"the Celery worker did not answer within 60 s; see {log_path}")
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never a downloaded browser). Module-scoped: Playwright's
    sync API holds an event loop in this thread while it runs, and the crawler's own browser strategy
    (started by other tests) cannot run beside it."""
    from playwright.sync_api import sync_playwright

    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.fail(
            "No Chromium at /usr/bin/chromium: run `make test`, which installs it (apt-get install chromium)."
        )
    # Playwright's sync API keeps an event loop in this thread; the ORM calls tests make beside it are
    # still synchronous, which Django would otherwise refuse.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=BROWSER_ARGS, headless=True)
        yield launched
        launched.close()
