"""The workspace's visitor-token secret on the workspace settings page: owners reveal it on demand and rotate
it; the old secret keeps verifying tokens for the grace period; admins and members never see it."""

from __future__ import annotations

import pytest

from agents.visitor import BadSignature, sign, verify_any, workspace_secrets
from sources.models import Workspace
from tests.factories import make_member

pytestmark = pytest.mark.django_db


def test_the_secret_is_shown_only_on_an_owners_request(client, workspace, owner):
    client.force_login(owner)
    page = client.get("/app/workspace/settings").content.decode()
    assert workspace.visitor_secret not in page and "Reveal secret" in page
    revealed = client.post("/app/workspace/visitor-secret")
    assert revealed.status_code == 200 and revealed["Cache-Control"] == "no-store"
    assert workspace.visitor_secret in revealed.content.decode()


@pytest.mark.parametrize("role", ["admin", "member"])
def test_admins_and_members_can_neither_see_nor_rotate_it(client, workspace, role):
    client.force_login(make_member(workspace, f"someone-{role}", role))
    assert client.post("/app/workspace/visitor-secret").status_code == 403
    assert client.post("/app/workspace/visitor-secret/rotate").status_code == 403
    page = client.get("/app/workspace/settings").content.decode()
    assert workspace.visitor_secret not in page and "Only owners" in page
    assert Workspace.objects.get(id=workspace.id).visitor_secret == workspace.visitor_secret


def test_an_outsider_never_sees_another_workspaces_secret(client, workspace, outsider):
    client.force_login(outsider)
    revealed = client.post("/app/workspace/visitor-secret").content.decode()
    assert workspace.visitor_secret not in revealed


def test_rotating_shows_the_new_secret_and_keeps_the_old_one_valid_for_a_while(
    client, workspace, owner, settings
):
    settings.VISITOR_SECRET_GRACE_SECONDS = 3600
    old_secret = workspace.visitor_secret
    old_token = sign(old_secret, user_id="u", audiences=["staff"])
    client.force_login(owner)
    response = client.post("/app/workspace/visitor-secret/rotate")
    rotated = Workspace.objects.get(id=workspace.id)
    assert rotated.visitor_secret != old_secret and rotated.visitor_secret in response.content.decode()
    assert "previous secret are accepted until" in response.content.decode()
    assert verify_any(workspace_secrets(rotated), old_token).audiences == ["staff"]
    # A second rotation ends the first one's grace: only one previous secret is kept.
    client.post("/app/workspace/visitor-secret/rotate")
    with pytest.raises(BadSignature):
        verify_any(workspace_secrets(Workspace.objects.get(id=workspace.id)), old_token)
