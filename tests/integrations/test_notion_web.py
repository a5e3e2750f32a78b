"""The integrations page and the Notion picker through Django's test client, with the OAuth code exchanged
against the fake Notion over real HTTP: who may connect, state bound to session and workspace, disconnect."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.test import Client

from integrations.models import Connection
from sources.models import Source, Status
from sources.tenancy import workspace_scope
from tests.integrations.notion_pages import build_workspace

pytestmark = pytest.mark.django_db


def consent(client: Client) -> dict[str, str]:
    """Start connecting, follow the redirect to the fake consent page, and press "Allow access": the
    callback's query (code and state)."""
    started = client.post("/app/integrations/notion/connect")
    assert started.status_code == 302
    authorize = started["Location"]
    assert "/v1/oauth/authorize?" in authorize and "state=" in authorize
    page = httpx.get(authorize).text
    allow = re.search(r'id="allow" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    query = parse_qs(urlsplit(allow).query)
    return {k: v[0] for k, v in query.items()}


def connections(workspace) -> list[Connection]:
    with workspace_scope(workspace.id):
        return list(Connection.objects.all())


def test_an_owner_connects_notion_and_the_token_never_shows(client, workspace, owner, notion):
    client.force_login(owner)
    callback = client.get("/app/integrations/notion/callback", consent(client))
    assert callback.status_code == 302
    [connection] = connections(workspace)
    assert connection.account_name == "Acme Handbook" and connection.account_email == "ada@acme.test"
    assert connection.connected_by == owner and connection.status == "active"
    assert connection.access_token in notion.tokens
    page = client.get("/app/integrations").content.decode()
    assert "Acme Handbook" in page and "Connected" in page
    assert connection.access_token not in page


def test_a_callback_for_another_session_or_workspace_is_refused(
    client, workspace, owner, other_workspace, notion
):
    from sources.models import Membership

    client.force_login(owner)
    query = consent(client)
    thief = Client()
    thief.force_login(owner)  # the same person in another browser: a different session
    assert thief.get("/app/integrations/notion/callback", query).status_code == 302
    assert connections(workspace) == []

    # The owner belongs to a second workspace too and switches this session to it.
    with workspace_scope(other_workspace.id):
        Membership.objects.create(workspace=other_workspace, user=owner, role="owner")
    client.post("/app/workspace", {"workspace": other_workspace.id})
    client.get("/app/integrations/notion/callback", query)
    assert connections(workspace) == [] and connections(other_workspace) == []
    # And a state is used once: the replay in the right workspace finds nothing either.
    client.post("/app/workspace", {"workspace": workspace.id})
    client.get("/app/integrations/notion/callback", query)
    assert connections(workspace) == []


def test_members_see_connections_read_only_and_cannot_connect_or_pick(
    client, member, notion_connection, agent, workspace
):
    client.force_login(member)
    page = client.get("/app/integrations").content.decode()
    assert "Acme Handbook" in page and "data-connect=" not in page and "data-disconnect" not in page
    assert client.post("/app/integrations/notion/connect").status_code == 403
    assert client.post(f"/app/integrations/{notion_connection.id}/disconnect").status_code == 403
    assert client.get(f"/app/agents/{agent.id}/sources/from/notion").status_code == 403
    assert connections(workspace)[0].access_token == notion_connection.access_token  # untouched


def test_an_outsider_gets_404_for_the_connection_and_the_picker(client, outsider, notion_connection, agent):
    client.force_login(outsider)
    assert client.post(f"/app/integrations/{notion_connection.id}/disconnect").status_code == 404
    assert client.get(f"/app/agents/{agent.id}/sources/from/notion").status_code == 404
    assert "Acme Handbook" not in client.get("/app/integrations").content.decode()


def test_the_picker_lists_pages_and_adds_a_source(client, owner, notion_connection, agent, notion, workspace):
    ids = build_workspace(notion)
    client.force_login(owner)
    first = client.get(f"/app/agents/{agent.id}/sources/from/notion").content.decode()
    assert "Kettle handbook" in first and "data-more" in first  # two per page: more to come
    found = client.get(f"/app/agents/{agent.id}/sources/from/notion", {"q": "support"}).content.decode()
    assert "Support FAQ" in found and "Kettle handbook" not in found
    response = client.post(
        f"/app/agents/{agent.id}/sources/from/notion",
        {"item": [f"page:{ids['handbook']}:Kettle handbook"], "include_children": "on"},
    )
    assert response.status_code == 302
    with workspace_scope(workspace.id):
        source = Source.objects.get(kind="notion")
    assert source.title == "Kettle handbook" and source.status == Status.PENDING
    assert source.config == {
        "connection": notion_connection.id,
        "items": [{"id": ids["handbook"], "type": "page", "title": "Kettle handbook"}],
        "include_children": True,
    }


def test_disconnect_revokes_deletes_the_token_and_marks_sources(
    client, owner, notion_connection, agent, notion, workspace
):
    ids = build_workspace(notion)
    client.force_login(owner)
    client.post(f"/app/agents/{agent.id}/sources/from/notion", {"item": [f"page:{ids['handbook']}:Handbook"]})
    token = notion_connection.access_token
    response = client.post(f"/app/integrations/{notion_connection.id}/disconnect", follow=True)
    assert "documents searchable" in response.content.decode()
    assert token in notion.revoked and token not in notion.tokens
    [connection] = connections(workspace)
    assert connection.access_token == "" and connection.status == "needs_reconnect"
    with workspace_scope(workspace.id):
        source = Source.objects.get(kind="notion")
    assert source.error == "Reconnect Notion to sync this source."
    page = client.get("/app/integrations").content.decode()
    assert "Needs reconnecting" in page and "stay searchable" in page
