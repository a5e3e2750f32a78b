"""An agent's model URL is typed by a workspace admin (a customer): it may not point into our network.
Checked when saved (settings form, Django admin) and again when called; visitors see a generic error, the
admin sees why in the preview and the conversation log."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings

from agents.models import Agent, Message
from agents.turn import VISITOR_ERROR
from sources.tenancy import workspace_scope
from tests.agents.conftest import chat, events
from tests.ingestion.crawl.servers import guard_connections, tcp_attempts

pytestmark = pytest.mark.django_db

FORM = {"name": "Support bot", "retrieval_mode": "inject", "top_k": 4, "hybrid": "on", "llm_model": "m"}


def _settings_url(agent: Agent) -> str:
    return f"/app/agents/{agent.id}/settings"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:11434/v1", "private or reserved network"),
        ("http://localhost:8000/v1", "private or reserved network"),
        ("http://10.0.0.8/v1", "private or reserved network"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://user:pw@example.com/v1", "Leave the user name and password out"),
    ],
)
@override_settings(OUTBOUND_ALLOWED_NETWORKS=[])
def test_the_settings_form_refuses_a_model_url_on_our_network(client, owner, agent, url, reason, monkeypatch):
    attempts = guard_connections(monkeypatch)
    client.force_login(owner)
    response = client.post(_settings_url(agent), {**FORM, "llm_base_url": url})
    assert response.status_code == 200
    assert reason in str(response.context["form"].errors["llm_base_url"])
    agent.refresh_from_db()
    assert agent.llm_base_url == "" and tcp_attempts(attempts) == []


def test_the_settings_form_accepts_the_fake_provider_when_loopback_is_allowed(client, owner, agent, provider):
    client.force_login(owner)  # the test settings allow 127.0.0.0/8, as the crawler's do
    response = client.post(_settings_url(agent), {**FORM, "llm_base_url": provider.base_url})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.llm_base_url == provider.base_url


@override_settings(OUTBOUND_ALLOWED_NETWORKS=[])
def test_the_django_admin_refuses_a_model_url_on_our_network(client, workspace, agent):
    operator = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-for-tests-123")
    client.force_login(operator)
    url = f"/admin/agents/agent/{agent.id}/change/"
    form = client.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update(workspace=workspace.id, allowed_origins="[]", llm_base_url="http://169.254.169.254/")
    response = client.post(url, data)
    assert response.status_code == 200
    assert "cloud metadata" in str(response.context["adminform"].form.errors["llm_base_url"])


def test_a_model_url_that_became_private_is_refused_at_call_time(
    client, owner, llm_agent, knowledge, provider
):
    # Saved while allowed; then the operator tightens the policy (or the name now resolves elsewhere).
    with override_settings(OUTBOUND_ALLOWED_NETWORKS=[]):
        response = chat(client, llm_agent, "How long is the kettle warranty?")
        assert response.status_code == 502 and response.json()["error"]["message"] == VISITOR_ERROR
        stream = events(chat(client, llm_agent, "How long is the kettle warranty?", stream=True))
        assert stream[-1] == {
            "type": "error",
            "message": VISITOR_ERROR,
            "conversation_id": stream[-1]["conversation_id"],
        }
        client.force_login(owner)
        preview = client.post(
            f"/app/agents/{llm_agent.id}/preview/chat/stream",
            {"message": "How long is the kettle warranty?"},
            content_type="application/json",
        )
        error = events(preview)[-1]
    assert error["type"] == "error" and "model base URL was refused" in error["message"]
    assert "127.0.0.1" in error["detail"]
    assert provider.requests == []  # nothing reached the model server
    with workspace_scope(llm_agent.workspace_id):
        logged = [m.metadata for m in Message.objects.filter(role="assistant")]
    assert len(logged) == 3
    assert all("refused" in m["error"] and "private network" in m["error_detail"] for m in logged)
    operator = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-for-tests-123")
    client.force_login(operator)
    assert "The model base URL was refused" in client.get("/admin/agents/message/").content.decode()
