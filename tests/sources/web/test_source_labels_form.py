"""Audiences and metadata in the "Add source" dialog and on a source's settings page."""

from __future__ import annotations

import pytest

from sources.models import Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def test_the_add_dialog_sets_audiences_and_metadata(client, owner, agent):
    client.force_login(owner)
    response = client.post(
        f"/app/agents/{agent.id}/sources/add",
        {
            "kind": "text",
            "title": "Staff prices",
            "content": "Staff pay less.",
            "audiences": "staff, customers:gold",
            "metadata": "product: billing\nlang: de\nyear: 2026",
        },
    )
    assert response.status_code == 302
    with workspace_scope(agent.workspace_id):
        source = Source.objects.get(title="Staff prices")
    assert source.config["audience"] == ["staff", "customers:gold"]
    assert source.config["metadata"] == {"product": "billing", "lang": "de", "year": 2026}


def test_the_add_dialog_names_a_bad_metadata_line(client, owner, agent):
    client.force_login(owner)
    response = client.post(
        f"/app/agents/{agent.id}/sources/add",
        {"kind": "text", "title": "T", "content": "x", "metadata": "no colon here"},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400
    with workspace_scope(agent.workspace_id):
        assert not Source.objects.exists()


def test_the_settings_page_shows_and_changes_them(client, owner, agent):
    client.force_login(owner)
    client.post(f"/app/agents/{agent.id}/sources/add", {"kind": "text", "title": "T", "content": "x"})
    with workspace_scope(agent.workspace_id):
        source = Source.objects.get(title="T")
        Source.objects.filter(id=source.id).update(status="done")
    page = client.get(f"/app/sources/{source.id}/settings").content.decode()
    assert 'name="audiences"' in page and 'name="metadata"' in page
    client.post(
        f"/app/sources/{source.id}/settings", {"title": "T", "audiences": "staff", "metadata": "team: hr"}
    )
    with workspace_scope(agent.workspace_id):
        source.refresh_from_db()
    assert source.config["audience"] == ["staff"] and source.config["metadata"] == {"team": "hr"}
    page = client.get(f"/app/sources/{source.id}/settings").content.decode()
    assert 'value="staff"' in page and "team: hr" in page
    assert source.status == "pending"  # indexed again, so its chunks carry them
    with workspace_scope(agent.workspace_id):
        Source.objects.filter(id=source.id).update(status="done")
    # Emptied: public again, no metadata.
    client.post(f"/app/sources/{source.id}/settings", {"title": "T", "audiences": "", "metadata": ""})
    with workspace_scope(agent.workspace_id):
        source.refresh_from_db()
    assert source.config["audience"] == ["public"] and source.config["metadata"] == {}
