"""`manage.py create_workspace`: the first step after `docker compose up` (README, "Deployment")."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

pytestmark = pytest.mark.django_db


def create(**options: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_workspace", stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def test_creates_the_owner_a_one_time_password_link_and_a_working_api_key():
    from sources.models import Membership, Workspace
    from sources.tenancy import workspace_scope

    out, _ = create(name="Acme Corp", owner_email="Olivia@Acme.example", base_url="https://g.acme.example/")
    workspace = Workspace.objects.get(slug="acme-corp")
    with workspace_scope(workspace.id):
        membership = Membership.objects.select_related("user").get()
    assert membership.role == "owner" and membership.user.email == "olivia@acme.example"
    assert not membership.user.has_usable_password()

    key = re.search(r"API key:\s+(\S+)", out).group(1)
    api = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/api/v1/sources").status_code == 200

    link = re.search(r"Set password:\s+(\S+)", out).group(1)
    assert link.startswith("https://g.acme.example/set-password/")
    browser = Client(HTTP_HOST="localhost")
    form_page = browser.get(link.removeprefix("https://g.acme.example"), follow=True)
    assert b"Set your password" in form_page.content
    done = browser.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "a-long-new-passphrase-1", "new_password2": "a-long-new-passphrase-1"},
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/login/"
    assert browser.login(username="olivia@acme.example", password="a-long-new-passphrase-1")
    # The link works once: the token depends on the password it has just set.
    again = Client(HTTP_HOST="localhost").get(link.removeprefix("https://g.acme.example"), follow=True)
    assert b"has been used or has expired" in again.content


def test_refuses_a_taken_slug_a_bad_email_and_an_unknown_plan_before_creating_anything():
    from django.contrib.auth import get_user_model

    from sources.models import Workspace

    create(name="Acme", owner_email="a@acme.example")
    with pytest.raises(CommandError, match="exists already"):
        create(name="Acme", owner_email="b@acme.example")
    with pytest.raises(CommandError, match="not an email"):
        create(name="Other", owner_email="nobody")
    with pytest.raises(CommandError, match="No plan named 'team'; plans: default"):
        create(name="Planned", owner_email="p@acme.example", plan="team")
    assert not Workspace.objects.filter(slug="planned").exists()
    assert not get_user_model().objects.filter(email="p@acme.example").exists()


def test_plan_is_stored_and_printed():
    from sources.models import Plan, Workspace

    Plan.objects.create(name="team", label="Team", max_sources=50)
    out, _ = create(name="Planned", owner_email="p@acme.example", plan="team")
    assert Workspace.objects.get(name="Planned").plan.name == "team"
    assert "Plan:          Team" in out
    out, _ = create(name="Unplanned", owner_email="u@acme.example")
    assert Workspace.objects.get(name="Unplanned").plan is None  # on the default plan, which it prints
    assert "Plan:          Default" in out


def test_an_owner_with_an_account_keeps_it_and_gets_no_password_link(owner):
    from sources.models import Membership, Workspace
    from sources.tenancy import workspace_scope

    out, _ = create(name="Second", owner_email="OLIVIA@example.com")
    assert "Set password:  none" in out and "/set-password/" not in out
    workspace = Workspace.objects.get(slug="second")
    with workspace_scope(workspace.id):
        assert Membership.objects.get().user == owner
