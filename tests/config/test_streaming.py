"""The widget's chat stream served by the image's server (gunicorn + uvicorn workers, ASGI): events leave as
they are produced, many streams share a few threads, and the per-address rate limit still holds."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings

from tests.config.web_server import many_streams, slow_model, web_server
from tests.factories import index_text

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ORIGIN = "https://acme.example"


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def test_asgi_streams_events_as_the_model_produces_them_with_fewer_threads_than_streams(workspace, agent):
    index_text(workspace, agent, "Returns", "Return any item within 30 days of delivery for a full refund.")
    with slow_model(tokens=10, rate=10.0) as model:
        agent.llm_base_url, agent.llm_model = model.base_url, "slow"
        agent.save(update_fields=["llm_base_url", "llm_model"])
        with web_server(
            test_run_id=settings.TEST_RUN_ID, database_url=database_url(), WEB_CONCURRENCY="1",
            STREAM_THREADS="4", TRUSTED_PROXY_HEADER="HTTP_X_REAL_IP",
        ) as server:  # fmt: skip
            url = f"{server.url}/api/v1/agents/{agent.public_key}/chat/stream"
            addresses = [f"10.0.0.{i}" for i in range(12)]
            results = asyncio.run(many_streams(url, 12, origin=ORIGIN, addresses=addresses))
            # Twelve streams of one second each through four threads: every one completes.
            assert all(r.completed for r in results), [(r.status, r.error, r.events[-3:]) for r in results]
            assert model.requests == 12
            for result in results:
                assert result.events.count("text.delta") == 10
                # Not buffered: the first event left a good while before the model finished.
                assert result.done_s - result.first_event_s > 0.5

            # The per-address limit holds on the stream: one address, past WIDGET_RATE_PER_ADDRESS (30/min).
            burst = asyncio.run(many_streams(url, 33, origin=ORIGIN, addresses=["10.9.9.9"] * 33))
            assert sorted(r.status for r in burst).count(429) == 3, [r.status for r in burst]


def _server_backends(application: str = "") -> dict[int, object]:
    """The web server's connections to the test database: pid -> when the backend started. Those of its
    requests by default; `application` names another (the API key listener, sources/key_rows.py)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend' AND application_name = %s",
            [application],
        )
        return dict(cursor.fetchall())


def test_api_threads_and_stream_threads_keep_their_connections_and_chat_requests_close_theirs(
    workspace, agent
):
    """config/asgi.py: the REST API runs on a fixed thread pool whose threads keep their database
    connections (the same backends serve request after request); so do the stream pool's threads
    (config/streaming.py, STREAM_THREADS); the chat's requests, on Django's ASGI handler, each run their view
    in a thread of its own and leave no connection behind, however many chats ran."""
    import httpx

    from sources.services import api_key_create

    index_text(workspace, agent, "Returns", "Return any item within 30 days of delivery for a full refund.")
    _key, api_key = api_key_create(workspace=workspace, name="router")
    with web_server(
        test_run_id=settings.TEST_RUN_ID, database_url=database_url(), WEB_CONCURRENCY="1", WEB_THREADS="2",
        STREAM_THREADS="3",
        TRUSTED_PROXY_HEADER="HTTP_X_REAL_IP",
    ) as server:  # fmt: skip
        headers = {"Authorization": f"Bearer {api_key}", "Host": "localhost"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:

            def search(i: int) -> None:
                params = {"q": f"return an item {i}", "mode": "keyword"}
                response = client.get("/api/v1/search", params=params)
                assert response.status_code == 200, response.text
                assert response.json()["results"]

            # Four at a time, so both threads of the pool start (and connect) before anything is counted.
            with ThreadPoolExecutor(4) as clients:
                list(clients.map(search, range(12)))
            kept = _server_backends()
            assert len(kept) == 2  # one per thread of the pool
            assert len(_server_backends("grounded-api-key-listener")) == 1  # and one per process listens
            with ThreadPoolExecutor(4) as clients:
                list(clients.map(search, range(12, 40)))
            assert _server_backends() == kept  # the same backends, not new ones (nor a pool's)

            url = f"{server.url}/api/v1/agents/{agent.public_key}/chat/stream"
            chat = f"{server.url}/api/v1/agents/{agent.public_key}/chat"  # JSON, also on the ASGI handler

            def chats(first: int) -> set:
                addresses = [f"10.1.{first}.{i}" for i in range(24)]
                results = asyncio.run(many_streams(url, 24, origin=ORIGIN, addresses=addresses))
                assert all(r.completed for r in results), [
                    (r.status, r.error, r.events[-3:]) for r in results
                ]
                for i in range(6):
                    headers = {"Origin": ORIGIN, "X-Real-IP": f"10.2.{first}.{i}", "Host": "localhost"}
                    response = httpx.post(chat, json={"message": "Returns?"}, headers=headers, timeout=30)
                    assert response.status_code == 200, response.text
                # A request's own connection closes just after its response left: give it a moment.
                deadline = time.monotonic() + 10
                while len(backends := _server_backends()) > len(kept) + 3 and time.monotonic() < deadline:
                    time.sleep(0.1)
                return backends

            after_first = chats(0)
            assert (
                kept.items() <= after_first.items() and len(after_first) - len(kept) <= 3
            )  # one per stream thread
            after_second = chats(1)
            assert after_second == after_first, (
                "chat requests left connections open, or stream threads opened new ones"
            )
            search(30)
            assert _server_backends() == after_first
