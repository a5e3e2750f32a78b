"""Accounts through the web (django-allauth): sign-up, the confirmation mail, sign-in, password reset, and
where a person without a workspace lands. Mail is read from Django's test outbox."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client

from sources.models import Membership, Workspace
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase-42"


def link_in(message) -> str:
    return re.search(r"https?://testserver(/\S+)", message.body).group(1)


def sign_up(client: Client, email: str, next_url: str = "") -> str:
    """Sign up; returns the path of the confirmation link that was mailed."""
    mail.outbox.clear()
    url = "/accounts/signup/" + (f"?next={next_url}" if next_url else "")
    response = client.post(url, {"email": email, "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == "/accounts/confirm-email/"
    (message,) = mail.outbox
    assert message.to == [email]
    return link_in(message)


def test_sign_up_needs_the_mailed_link_before_anyone_can_sign_in(client):
    confirm = sign_up(client, "nora@acme.example")
    # Not signed in yet, and signing in only sends the link again.
    assert client.get("/app/").status_code == 302
    other = Client()
    response = other.post("/accounts/login/", {"login": "nora@acme.example", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/accounts/confirm-email/"
    assert other.get("/app/").status_code == 302

    page = client.get(confirm)
    assert page.status_code == 200 and b"nora@acme.example" in page.content
    confirmed = client.post(confirm)
    assert confirmed.status_code == 302
    # Signed in, without a workspace: sent to create one.
    assert client.get("/app/", follow=True).redirect_chain[-1][0] == "/app/welcome"
    assert Client().login(username="nora@acme.example", password=PASSWORD)


def test_a_confirmed_person_creates_a_workspace_and_owns_it(client):
    client.post(sign_up(client, "nora@acme.example"))
    response = client.post("/app/workspaces/new", {"name": "Nora's Kettles"})
    assert response.status_code == 302 and response["Location"] == "/app/"
    workspace = Workspace.objects.get(name="Nora's Kettles")
    assert workspace.slug == "noras-kettles"
    with workspace_scope(workspace.id):
        (membership,) = Membership.objects.select_related("user")
    assert membership.role == "owner" and membership.user.username == "nora@acme.example"
    assert client.get("/app/").status_code == 200
    # A second workspace of the same name gets its own address.
    client.post("/app/workspaces/new", {"name": "Nora's Kettles"})
    assert Workspace.objects.filter(slug="noras-kettles-2").exists()


def test_an_operator_made_account_signs_in_without_a_confirmation_mail(client, owner):
    """Accounts made by an operator (make_member, create_workspace, the admin) have no e-mail record."""
    response = client.post("/accounts/login/", {"login": "olivia", "password": "pw-for-tests-123"})
    assert response.status_code == 302 and response["Location"] == "/app/"
    assert not mail.outbox


def test_old_sign_in_links_still_lead_to_sign_in(client):
    response = client.get("/login/?next=/app/workspace/people")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/app/workspace/people"


def test_password_reset_by_mail(client, owner):
    response = client.post("/accounts/password/reset/", {"email": "olivia@example.com"})
    assert response.status_code == 302
    (message,) = mail.outbox
    reset_page = client.get(link_in(message), follow=True)
    form_url = reset_page.redirect_chain[-1][0]
    done = client.post(form_url, {"password1": "a-new-passphrase-77", "password2": "a-new-passphrase-77"})
    assert done.status_code == 302
    assert Client().login(username="olivia", password="a-new-passphrase-77")


def test_the_pages_wear_the_products_look(client, owner):
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        page = client.get(path).content.decode()
        assert 'class="auth"' in page and "app/app.css" in page, path
    client.force_login(owner)
    for path in ("/accounts/email/", "/accounts/password/change/"):
        response = client.get(path)
        assert response.status_code == 200 and b'class="auth"' in response.content, path


def test_sign_up_can_be_closed(client, settings):
    settings.ACCOUNT_SIGNUP_OPEN = False
    form = {"email": "x@acme.example", "password1": PASSWORD, "password2": PASSWORD}
    client.post("/accounts/signup/", form)
    assert b"Sign-up is closed" in client.get("/accounts/signup/").content
    assert not mail.outbox


def test_an_address_taken_by_an_existing_account_makes_no_second_account(client, owner):
    from django.contrib.auth import get_user_model

    form = {"email": "olivia@example.com", "password1": PASSWORD, "password2": PASSWORD}
    client.post("/accounts/signup/", form)
    assert get_user_model().objects.filter(email__iexact="olivia@example.com").count() == 1
    # The address's owner is told by mail; the form tells nobody whether the address has an account.
    (message,) = mail.outbox
    assert message.to == ["olivia@example.com"] and "already" in message.body.lower()
