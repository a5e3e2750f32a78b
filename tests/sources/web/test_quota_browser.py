"""A plan's limits as a person meets them in Chromium: the add dialog refuses the source over the plan with
the plan's message beside its button (nothing stored), and the workspace settings page shows each quota's
use against the plan, a full one marked."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sources import quotas
from sources.models import Plan, Source
from sources.plans import assign_plan
from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.sources.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_plan_refuses_a_source_in_the_dialog_and_the_usage_card_shows_it(
    sign_in, owner, agent, workspace
):
    index_text(workspace, agent, "Returns", "Returns are accepted within 30 days of purchase.")
    Plan.objects.create(name="starter", label="Starter", max_sources=1, max_crawl_pages_per_day=500)
    assign_plan(workspace, "starter")
    quotas.take(workspace, "crawl_pages", 120)

    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources?add=text")
    dialog = page.locator("#add-dialog")
    page.fill("#add-title-input", "Shipping")
    page.fill("#add-content", "We ship within two working days.")
    dialog.locator("[data-submit]").click()
    refusal = dialog.locator('[data-error-for="__all__"]')
    expect(refusal).to_contain_text("Your plan allows 1 source; this workspace has 1.")
    screenshot(page, "quota-refused", full_page=False)
    with workspace_scope(workspace.id):
        assert list(Source.objects.values_list("title", flat=True)) == ["Returns"]

    page.goto(page.url.split("/app/")[0] + "/app/workspace/settings")
    expect(page.locator('tr[data-quota="sources"]')).to_have_class("usage-full")
    expect(page.locator('tr[data-quota="crawl_pages"]')).to_contain_text("120")
    screenshot(page, "workspace-usage")  # the whole page: the helper scrolls to the top first
