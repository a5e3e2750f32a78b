"""The widget's chat stream served by the image's server (gunicorn + uvicorn workers, ASGI): events leave as
they are produced, many streams share a few threads, and the per-address rate limit still holds."""

from __future__ import annotations

import asyncio

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
