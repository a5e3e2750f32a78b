"""The workspace page: members and roles, API keys; its rules, and that nothing crosses workspaces."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from sources.models import ApiKey, Membership
from sources.services import api_key_create
from sources.tenancy import workspace_scope
from tests.factories import make_member

pytestmark = pytest.mark.django_db


def roles(workspace) -> dict[str, str]:
    with workspace_scope(workspace.id):
        return dict(Membership.objects.values_list("user__username", "role"))


def membership_of(workspace, user) -> Membership:
    with workspace_scope(workspace.id):
        return Membership.objects.get(user=user)


def test_an_admin_adds_changes_and_removes_members(client, workspace, owner):
    admin = make_member(workspace, "adam", "admin")
    newcomer = get_user_model().objects.create_user("nina", "Nina@Example.com", "pw-for-tests-123")
    client.force_login(admin)
    page = client.get("/app/workspace/people").content.decode()
    assert 'data-member="olivia"' in page and "Add member" in page

    response = client.post("/app/workspace/members/add", {"identifier": "nina@example.com", "role": "member"})
    assert response.status_code == 302
    assert roles(workspace)["nina"] == "member"
    again = client.post("/app/workspace/members/add", {"identifier": "nina", "role": "admin"})
    assert again.status_code == 400 and "already a member" in again.content.decode()

    nina = membership_of(workspace, newcomer)
    client.post(f"/app/workspace/members/{nina.id}/role", {"role": "admin"})
    assert roles(workspace)["nina"] == "admin"
    client.post(f"/app/workspace/members/{nina.id}/remove")
    assert "nina" not in roles(workspace)


def test_unknown_accounts_and_bad_roles_are_clear_errors(client, workspace, owner):
    client.force_login(owner)
    response = client.post("/app/workspace/members/add", {"identifier": "nobody", "role": "member"})
    assert response.status_code == 400 and "No single account matches" in response.content.decode()
    get_user_model().objects.create_user("zed", "z@example.com", "pw-for-tests-123")
    response = client.post("/app/workspace/members/add", {"identifier": "zed", "role": "emperor"})
    assert response.status_code == 400 and "Choose a role" in response.content.decode()
    assert set(roles(workspace)) == {"olivia"}


def test_only_an_owner_touches_the_owner_role(client, workspace, owner):
    admin = make_member(workspace, "adam", "admin")
    other = make_member(workspace, "mia", "member")
    client.force_login(admin)
    owner_row = membership_of(workspace, owner)
    for path, data in (
        (f"/app/workspace/members/{owner_row.id}/role", {"role": "member"}),
        (f"/app/workspace/members/{owner_row.id}/remove", {}),
        (f"/app/workspace/members/{membership_of(workspace, other).id}/role", {"role": "owner"}),
    ):
        response = client.post(path, data)
        assert response.status_code == 400 and "Only an owner" in response.content.decode(), path
    assert roles(workspace) == {"olivia": "owner", "adam": "admin", "mia": "member"}

    client.force_login(owner)
    client.post(f"/app/workspace/members/{membership_of(workspace, other).id}/role", {"role": "owner"})
    assert roles(workspace)["mia"] == "owner"


def test_the_last_owner_cannot_leave_or_step_down(client, workspace, owner):
    client.force_login(owner)
    row = membership_of(workspace, owner)
    for path, data in (
        (f"/app/workspace/members/{row.id}/role", {"role": "admin"}),
        (f"/app/workspace/members/{row.id}/remove", {}),
    ):
        response = client.post(path, data)
        assert response.status_code == 400 and "needs an owner" in response.content.decode()
    assert roles(workspace) == {"olivia": "owner"}


def test_a_new_key_is_shown_once_works_and_stops_working_when_revoked(client, workspace, owner):
    client.force_login(owner)
    response = client.post("/app/workspace/keys/new", {"name": "CMS sync"})
    page = response.content.decode()
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    raw = page.split("<pre data-key>", 1)[1].split("</pre>", 1)[0]
    assert raw.startswith("gk_")
    assert raw not in client.get("/app/workspace/people").content.decode()  # never shown again
    api = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    assert client.get("/api/v1/sources", **api).status_code == 200

    with workspace_scope(workspace.id):
        key = ApiKey.objects.get(name="CMS sync")
    assert client.post(f"/app/workspace/keys/{key.id}/revoke").status_code == 302
    assert client.get("/api/v1/sources", **api).status_code == 401
    assert 'data-revoked class="muted"' in client.get("/app/workspace/people").content.decode()


def test_a_member_reads_the_page_and_every_change_is_refused(client, workspace, owner, member):
    key, _raw = api_key_create(workspace=workspace, name="default")
    client.force_login(member)
    page = client.get("/app/workspace/people").content.decode()
    assert 'data-member="olivia"' in page and "Add member" not in page and "Revoke" not in page
    owner_row = membership_of(workspace, owner)
    for path, data in (
        ("/app/workspace/members/add", {"identifier": "olivia", "role": "member"}),
        (f"/app/workspace/members/{owner_row.id}/role", {"role": "member"}),
        (f"/app/workspace/members/{owner_row.id}/remove", {}),
        ("/app/workspace/keys/new", {"name": "mine"}),
        (f"/app/workspace/keys/{key.id}/revoke", {}),
    ):
        assert client.post(path, data).status_code == 403, path
    assert roles(workspace)["olivia"] == "owner"
    with workspace_scope(workspace.id):
        assert list(ApiKey.objects.values_list("name", "revoked_at")) == [("default", None)]


def test_another_workspaces_members_and_keys_are_404(client, workspace, owner, other_workspace, outsider):
    their_key, _raw = api_key_create(workspace=other_workspace, name="theirs")
    their_row = membership_of(other_workspace, outsider)
    client.force_login(owner)
    for path, data in (
        (f"/app/workspace/members/{their_row.id}/role", {"role": "member"}),
        (f"/app/workspace/members/{their_row.id}/remove", {}),
        (f"/app/workspace/keys/{their_key.id}/revoke", {}),
    ):
        assert client.post(path, data).status_code == 404, path
    assert roles(other_workspace) == {outsider.username: "owner"}
    with workspace_scope(other_workspace.id):
        assert ApiKey.objects.get(id=their_key.id).revoked_at is None
    # Their people are not listed here either.
    assert outsider.username not in client.get("/app/workspace/people").content.decode()
