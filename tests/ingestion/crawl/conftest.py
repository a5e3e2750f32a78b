"""Crawls run in this process (Celery eager), with the embedder at a real HTTP provider on 127.0.0.1 whose
requests are the embedder's calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeProvider, openai_compatible_server


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with openai_compatible_server(FakeProvider()) as running:
        yield running


@pytest.fixture
def eager(settings, provider):
    """Tasks run inline, with the embedder at the fake provider (its requests are the embedder calls)."""
    from config.celery import app

    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    settings.EMBEDDERS = {
        "default": {
            "BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
            "OPTIONS": {"base_url": provider.base_url, "model": "fake-embed", "api_key": provider.api_key},
        }
    }
    settings.CRAWL_STRATEGIES = ("http",)
    yield provider
    app.conf.task_always_eager, app.conf.task_eager_propagates = before
