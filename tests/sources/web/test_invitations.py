"""Invitations (sources/invitations.py, the members page, the mailed link) and the workspace settings page:
who may invite whom, the link's life (expiry, revocation, one use), the address it is bound to, outsiders,
and the workspace's default re-sync schedule reaching a new source."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from sources import invitations
from sources.access import AccessError
from sources.models import Invitation, Membership, Source
from sources.tenancy import workspace_scope
from tests.factories import make_member

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase-42"


def invite(client: Client, email: str, role: str = "member") -> str:
    """Invite through the members page; returns the path of the mailed link."""
    mail.outbox.clear()
    response = client.post("/app/workspace/invitations/new", {"email": email, "role": role})
    assert response.status_code == 302, response.content.decode()[:1500]
    (message,) = mail.outbox
    assert message.to == [email.lower()]
    return re.search(r"http://testserver(/invitations/\S+/)", message.body).group(1)


def confirmed_person(email: str) -> Client:
    """A browser signed in as a new account that signed up with `email` and confirmed it."""
    client = Client()
    mail.outbox.clear()
    client.post("/accounts/signup/", {"email": email, "password1": PASSWORD, "password2": PASSWORD})
    (message,) = mail.outbox
    client.post(re.search(r"http://testserver(/\S+)", message.body).group(1))
    mail.outbox.clear()
    return client


def members(workspace) -> dict[str, str]:
    with workspace_scope(workspace.id):
        return dict(Membership.objects.values_list("user__username", "role"))


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def test_an_invitee_signs_up_with_the_address_and_joins_with_the_role(owner_client, workspace):
    link = invite(owner_client, "Nina@Acme.example", role="admin")
    assert "Acme" in mail.outbox[0].subject
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    token = link.split("/")[2]
    assert token not in invitation.token_hash  # only the hash is kept
    assert b'data-invitation="nina@acme.example"' in owner_client.get("/app/workspace/people").content

    stranger = Client()
    page = stranger.get(link).content.decode()
    assert "Join Acme" in page and "nina@acme.example" in page and "Create an account" in page
    nina = confirmed_person("nina@acme.example")
    assert nina.get(link).status_code == 200
    joined = nina.post(link)
    assert joined.status_code == 302 and joined["Location"] == "/app/"
    assert members(workspace)["nina@acme.example"] == "admin"
    assert nina.get("/app/").status_code == 200
    # The link works once.
    assert nina.post(link).status_code == 410
    assert b'data-invitation="nina@acme.example"' not in owner_client.get("/app/workspace/people").content


def test_another_address_is_refused(owner_client, workspace):
    link = invite(owner_client, "nina@acme.example")
    other = confirmed_person("someone-else@acme.example")
    page = other.get(link)
    assert page.status_code == 403 and b"sent to another address" in page.content
    assert other.post(link).status_code == 403
    assert "someone-else@acme.example" not in members(workspace)
    # Nor can they accept it by its id.
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    assert other.post(f"/app/invitations/{invitation.id}/accept").status_code == 404


def test_an_expired_invitation_is_refused(owner_client, workspace, settings):
    settings.INVITATION_EXPIRY_DAYS = 7
    link = invite(owner_client, "nina@acme.example")
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    assert abs(invitation.expires_at - invitation.created_at - timedelta(days=7)) < timedelta(seconds=5)
    Invitation.unscoped.filter(id=invitation.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    nina = confirmed_person("nina@acme.example")
    page = nina.get(link)
    assert page.status_code == 410 and b"has expired" in page.content
    assert nina.post(link).status_code == 410
    assert "nina@acme.example" not in members(workspace)
    assert b'data-invitation="nina@acme.example"' not in owner_client.get("/app/workspace/people").content


def test_a_revoked_invitation_stops_working(owner_client, workspace):
    link = invite(owner_client, "nina@acme.example")
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    assert owner_client.post(f"/app/workspace/invitations/{invitation.id}/revoke").status_code == 302
    nina = confirmed_person("nina@acme.example")
    assert nina.post(link).status_code == 410
    assert "nina@acme.example" not in members(workspace)
    # Revoking twice says so.
    assert owner_client.post(f"/app/workspace/invitations/{invitation.id}/revoke").status_code == 400


def test_inviting_again_replaces_the_earlier_link(owner_client, workspace):
    first = invite(owner_client, "nina@acme.example")
    second = invite(owner_client, "nina@acme.example", role="admin")
    nina = confirmed_person("nina@acme.example")
    assert nina.post(first).status_code == 410
    assert nina.post(second).status_code == 302
    assert members(workspace)["nina@acme.example"] == "admin"


def test_members_cannot_invite_or_revoke_and_admins_cannot_invite_owners(client, owner, workspace):
    owner_client = Client()
    owner_client.force_login(owner)
    invite(owner_client, "nina@acme.example")
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    client.force_login(make_member(workspace, "mark", "member"))
    assert (
        client.post(
            "/app/workspace/invitations/new", {"email": "x@acme.example", "role": "member"}
        ).status_code
        == 403
    )
    assert client.post(f"/app/workspace/invitations/{invitation.id}/revoke").status_code == 403
    assert b"Send invitation" not in client.get("/app/workspace/people").content
    admin = Client()
    admin.force_login(make_member(workspace, "ada", "admin"))
    refused = admin.post("/app/workspace/invitations/new", {"email": "x@acme.example", "role": "owner"})
    assert refused.status_code == 400 and b"Only an owner" in refused.content
    assert not Invitation.unscoped.filter(email="x@acme.example").exists()


def test_an_existing_member_and_a_bad_address_are_refused(owner_client, workspace, member):
    assert (
        owner_client.post(
            "/app/workspace/invitations/new", {"email": "mark@example.com", "role": "member"}
        ).status_code
        == 400
    )
    assert (
        owner_client.post(
            "/app/workspace/invitations/new", {"email": "not-an-address", "role": "member"}
        ).status_code
        == 400
    )
    assert not mail.outbox and not Invitation.unscoped.exists()


def test_a_mail_server_that_refuses_leaves_no_invitation(owner_client, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    response = owner_client.post(
        "/app/workspace/invitations/new", {"email": "nina@acme.example", "role": "member"}
    )
    assert response.status_code == 400 and b"could not be mailed" in response.content
    assert not Invitation.unscoped.exists()


class LockProbingBackend:
    """A mail backend that, while "sending", asks from another connection whether the workspace's row is
    free: another request taking stock in the workspace must not wait for the mail server."""

    workspace_id = 0
    row_was_free: list[bool] = []

    def __init__(self, **_kwargs) -> None:
        pass

    def send_messages(self, messages) -> int:
        import psycopg
        from django.db import connection

        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        with psycopg.connect(**params) as other:
            other.execute("SET lock_timeout = '1s'")
            try:
                other.execute(
                    "SELECT id FROM sources_workspace WHERE id = %s FOR NO KEY UPDATE", [self.workspace_id]
                )
                LockProbingBackend.row_was_free.append(True)
            except psycopg.errors.LockNotAvailable:
                LockProbingBackend.row_was_free.append(False)
        return len(messages)


@pytest.mark.django_db(transaction=True)
def test_the_invitation_is_mailed_after_the_workspace_is_free_again(owner_client, workspace, settings):
    settings.EMAIL_BACKEND = f"{__name__}.LockProbingBackend"
    LockProbingBackend.workspace_id, LockProbingBackend.row_was_free = workspace.id, []
    owner_client.post("/app/workspace/invitations/new", {"email": "nina@acme.example", "role": "member"})
    assert LockProbingBackend.row_was_free == [True]
    with workspace_scope(workspace.id):
        assert Invitation.objects.filter(email="nina@acme.example", revoked_at__isnull=True).count() == 1


def test_an_outsider_gets_404_on_every_invitation_endpoint(owner_client, workspace, outsider):
    invite(owner_client, "nina@acme.example")
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    other = Client()
    other.force_login(outsider)
    assert other.post(f"/app/workspace/invitations/{invitation.id}/revoke").status_code == 404
    assert other.post(f"/app/invitations/{invitation.id}/accept").status_code == 404
    assert Client().get("/invitations/not-a-real-token/").status_code == 404
    assert Invitation.unscoped.get(id=invitation.id).revoked_at is None


def test_the_welcome_page_lists_invitations_to_your_confirmed_address(owner_client, workspace):
    invite(owner_client, "nina@acme.example", role="admin")
    nina = confirmed_person("nina@acme.example")
    welcome = nina.get("/app/", follow=True)
    assert welcome.redirect_chain[-1][0] == "/app/welcome"
    page = welcome.content.decode()
    assert 'data-invitation="acme"' in page and "Create workspace" in page
    invitation = Invitation.unscoped.get(email="nina@acme.example")
    assert nina.post(f"/app/invitations/{invitation.id}/accept").status_code == 302
    assert members(workspace)["nina@acme.example"] == "admin"


def test_accepting_is_claimed_once_and_members_cannot_invite(owner, workspace, member, django_user_model):
    actor = Membership.unscoped.get(user=owner)
    invitation = invitations.invite(
        actor=actor, email="nina@acme.example", role="member", base_url="http://x"
    )
    confirmed_person("nina@acme.example")
    nina = django_user_model.objects.get(username="nina@acme.example")
    invitations.invitation_accept(invitation=invitation, user=nina)
    with pytest.raises(invitations.InvitationError, match="accepted already"):
        invitations.invitation_accept(invitation=Invitation.unscoped.get(id=invitation.id), user=nina)
    # A row read before the first accept still looks pending; the conditional claim refuses it.
    with pytest.raises(invitations.InvitationError, match="a moment ago"):
        invitations.invitation_accept(invitation=invitation, user=nina)
    with pytest.raises(AccessError, match="Only owners and admins"):
        invitations.invite(
            actor=Membership.unscoped.get(user=member),
            email="y@acme.example",
            role="member",
            base_url="http://x",
        )


# --- the workspace settings page -----------------------------------------------------------------------


def test_owners_and_admins_set_the_name_and_the_default_schedule_members_only_look(client, workspace, owner):
    client.force_login(make_member(workspace, "ada", "admin"))
    response = client.post("/app/workspace/settings", {"name": "Acme Kettles", "default_schedule": "weekly"})
    assert response.status_code == 302
    workspace.refresh_from_db()
    assert (workspace.name, workspace.default_schedule) == ("Acme Kettles", "weekly")
    assert (
        client.post("/app/workspace/settings", {"name": "X", "default_schedule": "yearly"}).status_code == 400
    )
    assert (
        client.post("/app/workspace/settings", {"name": " ", "default_schedule": "daily"}).status_code == 400
    )
    mark = Client()
    mark.force_login(make_member(workspace, "mark", "member"))
    page = mark.get("/app/workspace/settings").content.decode()
    assert "Acme Kettles" in page and "Only owners and admins can change these" in page
    assert (
        mark.post("/app/workspace/settings", {"name": "Mine", "default_schedule": "off"}).status_code == 403
    )
    workspace.refresh_from_db()
    assert workspace.name == "Acme Kettles"


def test_a_new_source_gets_the_workspace_default_schedule(client, workspace, owner, agent, settings):
    settings.CRAWL_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    client.force_login(owner)
    client.post("/app/workspace/settings", {"name": "Acme", "default_schedule": "weekly"})
    response = client.post(
        f"/app/agents/{agent.id}/sources/add", {"kind": "sitemap", "url": "http://127.0.0.1:9/"}
    )
    assert response.status_code == 302
    assert Source.unscoped.get(agent_id=agent.id, kind="sitemap").schedule == "weekly"
    # A schedule the creator picks wins over the default.
    client.post(
        f"/app/agents/{agent.id}/sources/add",
        {"kind": "feed", "url": "http://127.0.0.1:9/f", "schedule": "off"},
    )
    assert Source.unscoped.get(agent_id=agent.id, kind="feed").schedule == "off"


def test_revealing_the_secret_is_logged(client, workspace, owner, caplog):
    client.force_login(owner)
    with caplog.at_level("INFO", logger="grounded.audit"):
        client.post("/app/workspace/visitor-secret")
    (record,) = [r for r in caplog.records if r.name == "grounded.audit"]
    assert record.msg["event"] == "visitor_secret_revealed"
    assert (record.msg["workspace_id"], record.msg["user_id"]) == (workspace.id, owner.id)
    assert workspace.visitor_secret not in str(record.msg)


def test_an_outsider_cannot_reach_the_settings_of_another_workspace(client, workspace, outsider):
    client.force_login(outsider)
    page = client.get("/app/workspace/settings").content.decode()
    assert "Globex" in page and "Acme" not in page


def test_operators_see_every_workspaces_invitations_in_the_admin(owner_client, django_user_model):
    invite(owner_client, "nina@acme.example")
    operator = django_user_model.objects.create_superuser("ops", "ops@example.com", "pw-for-tests-123")
    admin = Client()
    admin.force_login(operator)
    page = admin.get("/admin/sources/invitation/")
    assert page.status_code == 200 and b"nina@acme.example" in page.content


def test_pending_invitations_hold_seats_of_the_plan_and_acceptance_rechecks(owner_client, workspace):
    from sources.models import Plan

    plan = Plan.objects.create(name="duo", label="Duo", max_members=2)
    workspace.plan = plan
    workspace.save(update_fields=["plan"])
    link = invite(owner_client, "nina@acme.example")  # the owner plus Nina's pending seat: 2 of 2
    mail.outbox.clear()
    refused = owner_client.post(
        "/app/workspace/invitations/new", {"email": "omar@acme.example", "role": "member"}
    )
    assert refused.status_code == 402 and "Your plan allows" in refused.content.decode()
    assert not mail.outbox and not Invitation.unscoped.filter(email="omar@acme.example").exists()
    # Inviting Nina again replaces her own seat rather than taking another.
    link = invite(owner_client, "nina@acme.example")

    # The plan is lowered before Nina accepts: she is told why, and joins nothing.
    Plan.objects.filter(id=plan.id).update(max_members=1)
    nina = confirmed_person("nina@acme.example")
    page = nina.post(link)
    assert page.status_code in (403, 409, 410), page.status_code
    assert "Your plan allows" in page.content.decode()
    assert "nina@acme.example" not in members(workspace)
    Plan.objects.filter(id=plan.id).update(max_members=2)
    assert nina.post(link).status_code == 302
    assert members(workspace)["nina@acme.example"] == "member"


def test_the_settings_page_shows_usage_against_the_plan(owner_client, workspace):
    page = owner_client.get("/app/workspace/settings").content.decode()
    assert "data-workspace-usage" in page and 'data-quota="members"' in page
