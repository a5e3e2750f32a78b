"""Notion end to end: a real Celery worker, Chromium through the OAuth redirect dance against the fake
Notion's consent page, the picker, and then what upstream changes do to search. Screenshots of the
integrations page and the picker go to docs/screenshots/."""

from __future__ import annotations

import pytest

from integrations.models import Connection
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import wait_for
from tests.fakes.notion_server import block
from tests.integrations.notion_pages import build_workspace
from tests.sources.web.conftest import screenshot, sign_in  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _source(workspace) -> Source | None:
    with workspace_scope(workspace.id):
        return Source.objects.filter(kind="notion").first()


def _settled(workspace) -> Source | None:
    source = _source(workspace)
    return source if source and source.status in ("done", "failed") else None


def _chunks_text(workspace, source_id: int) -> str:
    with workspace_scope(workspace.id):
        return " ".join(Chunk.objects.filter(source_id=source_id).values_list("text", flat=True))


def _resync(page, live_server, agent, workspace) -> Source:
    page.goto(f"{live_server.url}/app/agents/{agent.id}/sources")
    before = _source(workspace).indexed_at
    page.get_by_role("button", name="Sync now").first.click()  # a connector's word for it
    return wait_for(
        lambda: (s := _settled(workspace)) and (s.indexed_at != before or s.status == "failed") and s,
        timeout=90,
    )


def test_connect_pick_sync_edit_delete_and_revoke_notion(
    celery_worker,
    live_server,
    sign_in,  # noqa: F811 (the fixture imported above)
    notion,
    workspace,
    owner,
    member,
    outsider,
    agent,
    client,
):
    ids = build_workspace(notion)
    page = sign_in(owner)
    page.goto(f"{live_server.url}/app/integrations")
    page.get_by_role("button", name="Connect Notion").click()
    page.wait_for_selector("text=Grounded wants to access your Notion workspace")
    page.click("#allow")
    page.wait_for_url(f"{live_server.url}/app/integrations")
    assert page.get_by_text("Connected Notion: Acme Handbook").is_visible()
    screenshot(page, "integrations")

    page.goto(f"{live_server.url}/app/agents/{agent.id}/sources/from/notion")
    page.get_by_label("Kettle handbook").check()
    screenshot(page, "notion-picker")
    page.get_by_role("button", name=f"Add to {agent.name}").click()
    page.wait_for_url(f"{live_server.url}/app/agents/{agent.id}/sources")
    source = wait_for(lambda: _settled(workspace), timeout=120)
    assert source.status == "done", (source.error, source.error_detail)
    assert source.pages_total == 2  # the handbook and its child page

    page.goto(f"{live_server.url}/app/agents/{agent.id}/test?q=how+long+can+customers+return+a+kettle")
    cited = page.locator("a[href^='https://www.notion.so/Kettle-handbook-']")
    assert cited.count() >= 1, "the passage is cited with its Notion address"

    notion.edit_page(ids["child"], [block("paragraph", "We now ship to Chile and Peru within a week.")])
    source = _resync(page, live_server, agent, workspace)
    text = _chunks_text(workspace, source.id)
    assert "Chile and Peru" in text and "Canada, Mexico" not in text

    notion.archive(ids["child"])
    source = _resync(page, live_server, agent, workspace)
    assert "Chile and Peru" not in _chunks_text(workspace, source.id) and source.pages_total == 1

    notion.tokens.clear()  # revoked in Notion
    source = _resync(page, live_server, agent, workspace)
    assert source.status == "failed" and source.error == "Reconnect Notion to sync this source."
    with workspace_scope(workspace.id):
        assert Connection.objects.get().status == "needs_reconnect"
    page.goto(f"{live_server.url}/app/agents/{agent.id}/sources")
    assert page.get_by_text("Reconnect Notion to sync this source.").first.is_visible()
    assert "45 days" in _chunks_text(workspace, source.id)  # still searchable

    client.force_login(member)
    assert client.get(f"/app/agents/{agent.id}/sources/from/notion").status_code == 403
    assert client.post("/app/integrations/notion/connect").status_code == 403
    client.force_login(outsider)
    assert client.get(f"/app/agents/{agent.id}/sources/from/notion").status_code == 404
