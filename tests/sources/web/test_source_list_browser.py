"""The sources list's toolbar and bulk actions in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sources.models import Source
from sources.tenancy import workspace_scope
from tests.sources.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_filter_by_a_menu_tick_every_row_and_delete_them(sign_in, owner, workspace, agent):
    with workspace_scope(workspace.id):
        for i in range(55):
            Source.objects.create(
                agent=agent, kind="text", title=f"Answer {i:02d}", status="done", chunks_count=2
            )
        for i in range(3):
            Source.objects.create(
                agent=agent,
                kind="url",
                title=f"Help page {i}",
                config={"url": f"https://help.acme.example/{i}"},
                status="failed",
                error="This page doesn't exist (the site answered 404). Check the address.",
            )
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources")
    expect(page.locator("[data-matched]")).to_have_text("1\u201350 of 58")
    expect(page.locator("#source-rows tr")).to_have_count(50)
    screenshot(page, "sources-list", full_page=False)

    page.select_option("select[name=kind]", "url")  # applies at once
    expect(page.locator("[data-matched]")).to_have_text("1\u20133 of 3")
    assert "kind=url" in page.url
    expect(page.locator("[data-bulk=delete]")).to_be_disabled()
    page.check("[data-pick-all]")
    expect(page.locator("[data-bulk-count]")).to_have_text("3 sources ticked")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("[data-bulk=delete]")
    expect(page.locator(".flash-msg.success")).to_have_text("Deleted 3 sources.")
    with workspace_scope(workspace.id):
        assert Source.objects.count() == 55 and not Source.objects.filter(kind="url").exists()

    page.fill("input[name=q]", "Answer 5")
    page.press("input[name=q]", "Enter")
    expect(page.locator("#source-rows tr")).to_have_count(5)  # Answer 50 to 54
