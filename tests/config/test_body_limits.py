"""The request-body policy (config/body_limits.py) as clients meet it on the image's server: a body over its
limit, or one refused before it was read, is read to its end, so the client finishes sending and gets the
answer instead of a broken pipe. And Django's own ceiling never undercuts a limit of the policy."""

from __future__ import annotations

import pytest
from django.conf import settings

from config.body_limits import body_limit
from tests.config.web_server import send_whole, web_server

pytestmark = pytest.mark.django_db


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def test_over_limit_and_refused_bodies_are_read_before_the_answer():
    body = b'{"text": "' + b"x" * 20_000_000 + b'"}'  # far more than the sockets buffer
    with web_server(
        test_run_id=settings.TEST_RUN_ID, database_url=database_url(), WEB_CONCURRENCY="1"
    ) as server:
        # Over API_MAX_REQUEST_BYTES (2.5 MB): 413, after the whole body was read.
        status, _, answer = send_whole(server.url, "PATCH", "/api/v1/workspace", body)
        assert status == 413 and b'"too_large"' in answer and b"API_MAX_REQUEST_BYTES" in answer
        # Within the documents API's 32 MB, but no valid key: refused before the view reads the body.
        status, _, answer = send_whole(
            server.url, "PUT", "/api/v1/agents/1/documents/a", body, Authorization="Bearer gk_nope"
        )
        assert status == 401 and b'"authentication_failed"' in answer


def test_django_reads_every_body_the_policy_accepts():
    """DATA_UPLOAD_MAX_MEMORY_SIZE (Django's RequestDataTooBig) is at least every JSON limit of the policy,
    so the policy decides, not Django (multipart files do not count against it)."""
    json_limits = [
        body_limit("agent-document", "application/json"),
        body_limit("agent-document-batch", "application/json"),
        body_limit("source-list", "application/json"),
        body_limit("agent-list", "application/json"),
    ]
    assert all(limit.bytes <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE for limit in json_limits)
    assert body_limit("source-list", "multipart/form-data").bytes > settings.UPLOAD_MAX_FILE_BYTES
