"""The fake providers, on the ports config/settings/test.py gives this run (its worker processes read the
same settings), and connections made with tokens the fakes issued."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fixtures import serving
from tests.fakes.google_server import FakeGoogle
from tests.fakes.notion_server import FakeNotion


@pytest.fixture
def notion(_notion_server: FakeNotion) -> Iterator[FakeNotion]:
    _notion_server.reset()
    yield _notion_server
    _notion_server.reset()


@pytest.fixture
def notion_connection(notion, workspace, owner):
    from integrations.models import Connection, Provider
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        return Connection.objects.create(
            provider=Provider.NOTION,
            account_id="bot-7f3a",
            account_name="Acme Handbook",
            account_email="ada@acme.test",
            access_token=notion.issue_token(),
            connected_by=owner,
        )


@pytest.fixture(scope="session")
def _google_server() -> Iterator[FakeGoogle]:
    from django.conf import settings

    fake = FakeGoogle()
    with serving(fake.route, settings.GOOGLE_API_BASE_URL) as base_url:
        fake.base_url = base_url
        yield fake


@pytest.fixture
def google(_google_server: FakeGoogle) -> Iterator[FakeGoogle]:
    _google_server.reset()
    yield _google_server
    _google_server.reset()


@pytest.fixture
def google_connection(google, workspace, owner):
    from integrations.models import Connection, Provider
    from sources.tenancy import workspace_scope

    access, refresh = google.issue_tokens()
    with workspace_scope(workspace.id):
        return Connection.objects.create(
            provider=Provider.GOOGLE,
            account_id="0471-ada",
            account_name="Ada Admin",
            account_email="ada@acme.test",
            scopes="https://www.googleapis.com/auth/drive.readonly",
            access_token=access,
            refresh_token=refresh,
            connected_by=owner,
        )
