"""The whole way in, in Chromium: sign up, confirm the address from the mail, create a workspace, invite
someone by e-mail, and that person signs up from the invitation, confirms, and joins with the role.
Mail is read from Django's outbox (the live server runs in this process, with the locmem backend)."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from sources.models import Membership, Workspace
from sources.tenancy import workspace_scope
from tests.factories import wait_for
from tests.sources.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-passphrase-42"


def mailed_link(to: str, pattern: str) -> str:
    message = wait_for(lambda: next((m for m in reversed(mail.outbox) if to in m.to), None), timeout=10)
    return re.search(pattern, message.body).group(0)


def new_page(browser, *, width: int = 1280, height: int = 860):
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(15000)
    return page


def test_sign_up_verify_create_a_workspace_invite_and_accept(browser, live_server):
    base = live_server.url
    mail.outbox.clear()

    # Olga signs up; she cannot go further before she confirms her address.
    olga = new_page(browser)
    olga.goto(f"{base}/app/")
    assert "/accounts/login/" in olga.url
    olga.click("text=Create an account")
    screenshot(olga, "signup")
    olga.fill("input[name=email]", "olga@kettles.example")
    olga.fill("input[name=password1]", PASSWORD)
    olga.fill("input[name=password2]", PASSWORD)
    olga.click("button[type=submit]")
    expect(olga.locator("h1")).to_contain_text("Verify")
    olga.goto(f"{base}/app/")
    assert "/accounts/login/" in olga.url

    confirm = mailed_link("olga@kettles.example", r"http://[^\s]+/accounts/confirm-email/\S+")
    olga.goto(confirm)
    olga.click("button[type=submit]")
    olga.wait_for_url(f"{base}/app/welcome")
    screenshot(olga, "welcome")
    olga.fill("input[name=name]", "Kettle Co")
    olga.click("#new-workspace button[type=submit]")
    olga.wait_for_url(f"{base}/app/")
    workspace = Workspace.objects.get(name="Kettle Co")

    # She invites Ivan as an admin from the members page.
    olga.goto(f"{base}/app/workspace/people")
    olga.fill("#invite input[name=email]", "ivan@kettles.example")
    olga.select_option("#invite select[name=role]", "admin")
    olga.click("#invite button[type=submit]")
    expect(olga.locator('[data-invitation="ivan@kettles.example"]')).to_be_visible()
    screenshot(olga, "invitations")

    # Ivan opens the mailed link, signs up with that address, confirms it, and joins.
    invitation = mailed_link("ivan@kettles.example", r"http://[^\s]+/invitations/\S+/")
    ivan = new_page(browser)
    ivan.goto(invitation)
    expect(ivan.locator("h1")).to_have_text("Join Kettle Co")
    screenshot(ivan, "invitation")
    ivan.click("[data-signup]")
    expect(ivan.locator("input[name=email]")).to_have_value("ivan@kettles.example")
    ivan.fill("input[name=password1]", PASSWORD)
    ivan.fill("input[name=password2]", PASSWORD)
    ivan.click("button[type=submit]")
    expect(ivan.locator("h1")).to_contain_text("Verify")
    confirm = mailed_link("ivan@kettles.example", r"http://[^\s]+/accounts/confirm-email/\S+")
    ivan.goto(confirm)
    ivan.click("button[type=submit]")
    # Confirming signs him in and brings him back to the invitation.
    ivan.wait_for_url(invitation)
    ivan.click("[data-accept]")
    ivan.wait_for_url(f"{base}/app/")
    expect(ivan.locator(".workspace-name, #workspace-switch")).to_contain_text("Kettle Co")
    with workspace_scope(workspace.id):
        roles = dict(Membership.objects.values_list("user__email", "role"))
    assert roles == {"olga@kettles.example": "owner", "ivan@kettles.example": "admin"}

    olga.goto(f"{base}/app/workspace/people")
    expect(olga.locator('[data-member="ivan@kettles.example"]')).to_be_visible()
    expect(olga.locator('[data-invitation="ivan@kettles.example"]')).to_have_count(0)
    for page in (olga, ivan):
        page.context.close()


def test_sign_in_and_the_settings_page(browser, live_server, sign_in, owner, workspace):
    page = sign_in(owner)
    page.click('nav a[href="/app/workspace/settings"]')
    page.wait_for_url(f"{live_server.url}/app/workspace/settings")
    page.select_option("#id_default_schedule", "weekly")
    page.click("#workspace-general button[type=submit]")
    expect(page.locator(".flash-msg.success, .toasts")).to_contain_text("Saved")
    workspace.refresh_from_db()
    assert workspace.default_schedule == "weekly"
    page.click("text=Reveal secret")
    expect(page.locator("[data-visitor-secret]")).to_have_text(workspace.visitor_secret)
    screenshot(page, "workspace-settings")
