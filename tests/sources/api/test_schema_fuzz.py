"""The REST API against its own OpenAPI schema, driven by schemathesis (issue #56).

The schema is the one the app serves (/api/v1/schema), loaded from a live server on 127.0.0.1 that runs
the whole Django app on the real test database; every operation is called with a valid workspace API key,
with schemathesis's examples, boundary values and random inputs, and then as stateful sequences that follow
the links it infers between operations (an agent created, then read, patched, pushed to, deleted). Every
response must be: no 5xx, a status the schema documents for that operation, a Content-Type it documents,
and a body matching the documented schema.

Nothing leaves the machine: names other than localhost answer "no such host" (a fuzzed `domain` or source
URL would otherwise be looked up on the network) and the outbound policy allows loopback only."""

from __future__ import annotations

import ipaddress
import json
import socket

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Bounded for CI: each operation's random phase; explicit examples and boundary values run in addition.
EXAMPLES = 15
STATEFUL_EXAMPLES = 20
STATEFUL_STEPS = 10


_getaddrinfo = socket.getaddrinfo


def _loopback_only(host, *args, **kwargs):
    """Names resolve only to this machine: the test's own calls go to localhost, and a fuzzed `domain` or
    source URL (looked up by the crawler in the live server's thread) finds no such host."""
    name = host.decode() if isinstance(host, bytes) else str(host or "localhost")
    try:
        ipaddress.ip_address(name)
    except ValueError:
        if name != "localhost":
            raise socket.gaierror(
                socket.EAI_NONAME, f"{name}: no such host (the fuzz test resolves none)"
            ) from None
    return _getaddrinfo(host, *args, **kwargs)


@pytest.fixture
def fuzz_key(workspace, agent) -> str:
    """A workspace with an agent (so list and agent operations have something to answer) and its key."""
    from sources.services import api_key_create

    _key, raw = api_key_create(workspace=workspace, name="fuzz")
    return raw


def _served_schema() -> dict:
    """The schema document as the app serves it (no database needed: it describes, it does not list)."""
    from django.test import Client

    response = Client(HTTP_HOST="127.0.0.1").get(
        "/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200, response.content[:500]
    return json.loads(response.content)


# Loaded when the module is collected, so each operation is its own test item; calls go to the live server.
schema = schemathesis.openapi.from_dict(_served_schema())


@pytest.fixture
def server(live_server, monkeypatch, fuzz_key) -> dict:
    """What a call needs: the live server's address and the key; the crawler resolves no names meanwhile."""
    from config.celery import app

    monkeypatch.setattr(socket, "getaddrinfo", _loopback_only)
    yield {"base_url": live_server.url, "headers": {"Authorization": f"Bearer {fuzz_key}"}}
    app.control.purge()  # index and crawl jobs the created sources queued: no worker runs them here


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@schema.parametrize()
@FUZZ
def test_every_operation_answers_as_its_schema_says(case, server):
    case.call_and_validate(**server, checks=CHECKS)


def test_sequences_of_operations_answer_as_the_schema_says(server):
    """schemathesis's state machine: each step calls an operation whose inputs come from an earlier
    response through the links it infers (an id created by a POST, read, patched and deleted)."""

    calls: list[tuple[str, str, int]] = []

    class Workflow(schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return dict(server)

        def after_call(self, response, case):
            calls.append((case.method, case.operation.path, response.status_code))

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

    Workflow.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    # Not a run of 404s: some operations on one resource were reached with an id an earlier step created.
    linked = {(method, path) for method, path, status in calls if "{" in path and 200 <= status < 300}
    assert linked, calls
