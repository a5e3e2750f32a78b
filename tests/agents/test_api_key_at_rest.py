"""A model API key is never rendered back: not by the Django admin (editors or view-only staff), not by the
web UI's settings form. An empty submission keeps it; the clear box removes it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from agents.models import Agent
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

SECRET = "sk-live-9d8c7b6a5f4e3d2c"


@pytest.fixture
def keyed_agent(agent):
    with workspace_scope(agent.workspace_id):
        agent.llm_api_key = SECRET
        agent.save()
    return agent


def _admin_form_data(client, url, workspace):
    form = client.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update(workspace=workspace.id, allowed_origins='["https://acme.example"]')
    return data


def test_the_django_admin_never_shows_the_key_and_keeps_it_unless_replaced_or_cleared(
    client, workspace, keyed_agent
):
    operator = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-for-tests-123")
    client.force_login(operator)
    url = f"/admin/agents/agent/{keyed_agent.id}/change/"
    page = client.get(url).content.decode()
    assert SECRET not in page and "Set — type a new value to replace it" in page
    assert 'name="llm_api_key"' in page and 'name="clear_llm_api_key"' in page
    data = _admin_form_data(client, url, workspace)
    assert data.get("llm_api_key", "") == ""

    assert client.post(url, {**data, "name": "Renamed"}).status_code == 302
    assert Agent.unscoped.get(id=keyed_agent.id).llm_api_key == SECRET  # blank: kept
    assert client.post(url, {**data, "llm_api_key": "sk-replaced"}).status_code == 302
    assert Agent.unscoped.get(id=keyed_agent.id).llm_api_key == "sk-replaced"
    assert client.post(url, {**data, "clear_llm_api_key": "on"}).status_code == 302
    assert Agent.unscoped.get(id=keyed_agent.id).llm_api_key == ""
    assert "Set — type" not in client.get(url).content.decode()


def test_view_only_staff_see_that_a_key_is_set_not_the_key(client, keyed_agent):
    viewer = get_user_model().objects.create_user(
        "viewer", "v@example.com", "pw-for-tests-123", is_staff=True
    )
    viewer.user_permissions.add(Permission.objects.get(codename="view_agent"))
    client.force_login(viewer)
    response = client.get(f"/admin/agents/agent/{keyed_agent.id}/change/")
    page = response.content.decode()
    assert response.status_code == 200 and "Support bot" in page
    assert SECRET not in page and "model API key: set" in page


def test_the_web_settings_form_never_shows_the_key_to_owners_or_members(client, owner, member, keyed_agent):
    for person in (owner, member):
        client.force_login(person)
        page = client.get(f"/app/agents/{keyed_agent.id}/settings").content.decode()
        assert SECRET not in page and "A key is saved" in page
