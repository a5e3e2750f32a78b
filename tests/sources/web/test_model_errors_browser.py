"""The admin's live preview says why the model could not answer; the widget's visitor gets a generic line."""

from __future__ import annotations

import pytest
from django.test import override_settings
from playwright.sync_api import expect

from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.fakes.openai_server import FakeProvider, openai_compatible_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_preview_shows_why_a_refused_model_url_failed(sign_in, owner, workspace, agent):
    index_text(workspace, agent, "Shipping", "We ship to Canada. Express delivery takes two days.")
    with openai_compatible_server(FakeProvider()) as provider:
        with workspace_scope(workspace.id):
            agent.llm_base_url, agent.llm_model, agent.llm_api_key = provider.base_url, "m", provider.api_key
            agent.save()
        page = sign_in(owner)
        page.goto(page.url + f"agents/{agent.id}/settings")
        with override_settings(OUTBOUND_ALLOWED_NETWORKS=[]):  # the operator no longer allows loopback
            chat = page.locator("[data-preview-chat]")
            chat.locator("input[name=message]").fill("How long does express delivery take?")
            chat.get_by_role("button", name="Send").click()
            answer = chat.locator(".bubble.bot.error")
            expect(answer).to_contain_text("The model base URL was refused", timeout=20000)
            answer.locator("summary").click()
            expect(answer.locator("pre.detail")).to_contain_text("127.0.0.1")
        assert provider.requests == []
