"""The fake Notion server for the whole test session, on the port config/settings/test.py gives this run
(its worker processes read the same setting). One server per session: the integration tests and the lanes
benchmark share it, so a second server never races the first for the port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from tests.fakes.notion_server import FakeNotion
from tests.fakes.provider_http import provider_server


def _port(url: str) -> int:
    return urlsplit(url).port or 0


@contextmanager
def serving(route, url: str) -> Iterator[str]:
    try:
        with provider_server(route, port=_port(url)) as base_url:
            yield base_url
    except OSError as exc:
        pytest.fail(
            f"the fake provider cannot listen on {url} ({exc}); run again (another run id, another port)"
        )


@pytest.fixture(scope="session")
def _notion_server() -> Iterator[FakeNotion]:
    from django.conf import settings

    fake = FakeNotion()
    with serving(fake.route, settings.NOTION_API_BASE_URL) as base_url:
        fake.base_url = base_url
        yield fake
