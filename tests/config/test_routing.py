"""Which handler serves which view under the ASGI server (config/routing.py): the chat on Django's ASGI
handler, everything else on the WSGI handler's fixed thread pool."""

from __future__ import annotations

import pytest
from django.urls import reverse

from config.routing import served_async


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("agent-chat-stream", {"public_key": "pk_x"}),
        ("agent-chat", {"public_key": "pk_x"}),  # JSON, but waits on the model for the whole turn
        ("agent-preview-chat", {"agent_id": 1}),
    ],
)
def test_the_chat_is_served_by_the_asgi_handler(name, kwargs):
    assert served_async(reverse(name, kwargs=kwargs))


@pytest.mark.parametrize("path", ["/api/v1/search", "/healthz", "/app/", "/api/v1/agents/pk_x/widget/init"])
def test_everything_else_is_served_by_the_thread_pool(path):
    assert not served_async(path)


def test_an_unknown_path_goes_to_the_thread_pool_for_its_404():
    assert not served_async("/no/such/page")


def test_chat_requests_start_a_bounded_number_at_once_and_free_their_slot_when_the_response_starts():
    """A burst of chats must not each open a database connection at once (PostgreSQL refuses past its
    max_connections): at most `starts` views run at a time; a started stream no longer holds its slot."""
    import asyncio

    from config.routing import Router

    running, most, started = 0, 0, []
    release_views = asyncio.Event()
    end_streams = asyncio.Event()

    async def django_asgi(scope, receive, send):  # stands in for Django's handler: a view, then a stream
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release_views.wait()
        running -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        started.append(scope["path"])
        await end_streams.wait()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def burst():
        router = Router(asgi=django_asgi, wsgi=lambda environ, start: [], threads=1, starts=3)
        path = reverse("agent-chat-stream", kwargs={"public_key": "pk_x"})
        scope = {"type": "http", "path": path, "root_path": ""}

        async def noop(message):
            return None

        tasks = [asyncio.create_task(router(scope, noop, noop)) for _ in range(10)]
        await asyncio.sleep(0.05)
        assert (running, most) == (3, 3)  # the other 7 wait without starting their view
        release_views.set()
        await asyncio.sleep(0.05)
        assert len(started) == 10 and most == 3  # every stream started while 10 are open at once
        end_streams.set()
        await asyncio.gather(*tasks)

    asyncio.run(burst())
