"""The settings page sets the widget's look and auto sources; widget/init then hands them to the widget."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sources.tenancy import workspace_scope
from tests.sources.web.conftest import MASK_TEST_HOSTS, SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_widget_look_and_auto_sources_are_set_and_previewed(sign_in, owner, agent, settings):
    settings.AUTO_SOURCES_PER_HOUR = 7
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/settings")
    expect(page.locator("[data-auto-budget]")).to_contain_text("At most 7 new pages an hour")
    preview = page.locator("[data-widget-preview]")
    page.locator("input[name=widget_accent_color]").fill("#ffd60a")
    page.fill("input[name=widget_greeting]", "Hi! Ask me about kettles.")
    page.fill("input[name=widget_launcher_label]", "Ask Acme")
    page.select_option("select[name=widget_position]", "left")
    # The preview follows the fields before saving, with dark text on the light accent.
    expect(preview.locator("[data-wp-greeting]")).to_have_text("Hi! Ask me about kettles.")
    expect(preview.locator("[data-wp-launch]")).to_have_text("Ask Acme")
    assert preview.locator("[data-wp-launch]").evaluate("b => getComputedStyle(b).color") == "rgb(17, 24, 39)"
    expect(preview).to_have_class("widget-preview left")
    page.check("input[name=auto_sources]")
    page.click("[data-save]")
    expect(page.locator(".flash-msg.success")).to_have_text("Settings saved.")
    section = page.locator(".section:has([data-widget-preview])")
    assert not page.evaluate(MASK_TEST_HOSTS)  # no test address in the picture
    section.screenshot(path=str(SCREENSHOTS / "ui-settings-widget.png"))
    page.evaluate("window.__unmaskTestHosts()")

    with workspace_scope(agent.workspace_id):
        agent.refresh_from_db()
    assert (agent.widget_accent_color, agent.widget_position, agent.auto_sources) == ("#ffd60a", "left", True)
    assert (agent.widget_greeting, agent.widget_launcher_label) == ("Hi! Ask me about kettles.", "Ask Acme")


def test_a_bad_accent_colour_is_refused_next_to_the_field(client, owner, agent):
    from sources.web.agent_forms import AgentSettingsPageForm

    client.force_login(owner)
    form = AgentSettingsPageForm(instance=agent)
    data = {name: value for name, value in form.initial.items() if value is not None}
    data.update(widget_accent_color="red", allowed_origins="", widget_position="right")
    response = client.post(f"/app/agents/{agent.id}/settings", data)
    assert response.status_code == 200
    assert "A colour like #2f6df6." in response.content.decode()
