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
