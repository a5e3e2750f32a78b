"""JSON logs, a request id that follows the work into Celery tasks and into a failed source's operator
details, and Sentry only when SENTRY_DSN is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from sources.models import Source
from tests.factories import ROOT, wait_for
from tests.ingestion.crawl.servers import Reply, serving


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_request_id_follows_the_work_into_tasks_and_a_failed_sources_details(
    celery_worker, api, agent, settings
):
    settings.DJANGO_STRUCTLOG_TRUST_UPSTREAM_REQUEST_ID = True  # as behind a proxy that sets X-Request-ID
    request_id = f"req-{uuid.uuid4().hex[:12]}"
    with serving({"/gone.html": Reply(410, "<html><body>Gone</body></html>")}) as site:
        response = api.post(
            "/api/v1/sources",
            {"kind": "url", "url": site.url("/gone.html"), "agent": agent.id},
            format="json",
            HTTP_X_REQUEST_ID=request_id,
        )
        assert response.status_code == 201, response.content
        source_id = response.json()["id"]
        source = wait_for(lambda: Source.unscoped.filter(id=source_id, status="failed").first(), timeout=90)
    assert f"request_id={request_id}" in source.error_detail, source.error_detail
    assert request_id not in source.error  # people see the readable message only

    # The worker's own log lines are JSON objects carrying the same id (bound from the task's headers).
    log_path = ROOT / ".local" / f"test-worker-{settings.TEST_RUN_ID}.log"
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    tasks = {line.get("task_id") for line in lines if line.get("request_id") == request_id}
    assert len(tasks - {None}) >= 2, "the source's task and its page task both log the request id"


def _sentry_active(**env_overrides: str) -> bool:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", **env_overrides}
    script = "import django; django.setup(); import sentry_sdk; print(sentry_sdk.get_client().is_active())"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().endswith("True")


def test_sentry_is_initialised_only_when_a_dsn_is_set():
    assert _sentry_active(SENTRY_DSN="") is False
    # A DSN on a closed local port: initialising sends nothing.
    assert _sentry_active(SENTRY_DSN="http://publickey@127.0.0.1:9/1") is True


@pytest.mark.django_db
def test_a_request_is_logged_under_the_address_the_rate_limits_use(client, settings, caplog):
    """Not the X-Forwarded-For a client sends (which it can make up), unless a proxy header is trusted."""
    caplog.set_level("INFO", logger="django_structlog.middlewares.request")

    def logged_ip(**headers):
        caplog.clear()
        client.get("/healthz", **headers)
        lines = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
        # One line a request at INFO, when it finishes (the start is DEBUG).
        assert [line["event"] for line in lines] == ["request_finished"], lines
        return lines[0]["ip"]

    assert logged_ip(HTTP_X_FORWARDED_FOR="203.0.113.9", REMOTE_ADDR="127.0.0.1") == "127.0.0.1"
    settings.TRUSTED_PROXY_HEADER = "HTTP_X_REAL_IP"
    assert logged_ip(HTTP_X_REAL_IP="198.51.100.7", REMOTE_ADDR="127.0.0.1") == "198.51.100.7"
