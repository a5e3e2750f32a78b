"""Agents over the REST API by id: list, create, read, change settings (as the settings page does), delete
(through the same service as the page). The widget's public API and the documents API keep working."""

from __future__ import annotations

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from agents.models import Agent
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db


def test_an_agent_is_created_with_its_settings_and_listed(api):
    response = api.post(
        "/api/v1/agents",
        {"name": "Billing bot", "top_k": 6, "allowed_origins": ["https://shop.example/"], "hybrid": False},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "Billing bot" and body["top_k"] == 6 and body["hybrid"] is False
    assert body["allowed_origins"] == ["https://shop.example"] and body["public_key"].startswith("ag_")
    assert body["llm_api_key_set"] is False and "llm_api_key" not in body
    listed = api.get("/api/v1/agents").json()
    assert listed["count"] == 1 and [a["id"] for a in listed["results"]] == [body["id"]]
    assert api.get(f"/api/v1/agents/{body['id']}").json()["name"] == "Billing bot"
    assert api.get("/api/v1/agents", {"q": "billing"}).json()["count"] == 1
    assert api.get("/api/v1/agents", {"q": "garden"}).json()["count"] == 0


def test_a_name_with_a_null_character_is_a_field_error_not_a_500(api):
    # Found by the schema fuzz test: the agent row was inserted before the name was validated.
    response = api.post("/api/v1/agents", {"name": "Bot\x00"}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == ["name"]
    assert api.get("/api/v1/agents").json()["count"] == 0


def test_every_setting_of_the_settings_page_can_be_changed(api, agent):
    changes = {
        "name": "Renamed",
        "system_prompt": "Be brief.",
        "retrieval_mode": "tool",
        "top_k": 8,
        "min_score": 0.3,
        "hybrid": False,
        "fusion": "rrf",
        "vector_weight": 0.7,
        "keyword_weight": 0.3,
        "candidates": 80,
        "rerank_pool": 30,
        "reranker": "http",
        "context_budget": 9000,
        "semantic_cache": False,
        "cache_threshold": 0.95,
        "cache_max_entries": 20,
        "cache_ttl": 60,
        "scope_rules": "Kettles and their care only.",
        "context_template": "Use these:\n{context}",
        "offtopic_reply": "I only know about kettles.",
        "offtopic_in_user_language": True,
        "allowed_origins": ["https://a.example", "https://b.example"],
        "llm_base_url": "http://127.0.0.1:9/v1",
        "llm_model": "small-model",
        "llm_api_key": "sk-secret",
        "embedding_provider": "model",
        "embedding_model": "text-embedding-3-small",
    }
    from sources.web.agent_forms import AgentSettingsForm

    assert set(changes) == set(AgentSettingsForm.Meta.fields)  # the API covers the page, no more, no less
    response = api.patch(f"/api/v1/agents/{agent.id}", changes, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    for name, value in changes.items():
        if name != "llm_api_key":
            assert body[name] == value, name
    assert body["llm_api_key_set"] is True and "sk-secret" not in response.content.decode()
    with workspace_scope(agent.workspace_id):
        assert Agent.objects.get(id=agent.id).llm_api_key == "sk-secret"


def test_the_model_key_is_write_only_kept_when_omitted_and_removed_with_null(api, agent):
    api.patch(f"/api/v1/agents/{agent.id}", {"llm_api_key": "sk-one"}, format="json")
    kept = api.patch(f"/api/v1/agents/{agent.id}", {"name": "Still keyed"}, format="json").json()
    assert kept["llm_api_key_set"] is True
    with workspace_scope(agent.workspace_id):
        assert Agent.objects.get(id=agent.id).llm_api_key == "sk-one"
    removed = api.patch(f"/api/v1/agents/{agent.id}", {"llm_api_key": None}, format="json").json()
    assert removed["llm_api_key_set"] is False
    with workspace_scope(agent.workspace_id):
        assert Agent.objects.get(id=agent.id).llm_api_key == ""


@override_settings(OUTBOUND_ALLOWED_NETWORKS=[])
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:11434/v1", "private or reserved network"),
        ("http://169.254.169.254/latest/", "cloud metadata"),
        ("http://user:pw@example.com/v1", "Leave the user name and password out"),
    ],
)
def test_a_model_url_on_our_network_is_refused_as_the_page_refuses_it(api, agent, url, reason):
    response = api.patch(f"/api/v1/agents/{agent.id}", {"llm_base_url": url}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and reason in " ".join(error["fields"]["llm_base_url"])
    with workspace_scope(agent.workspace_id):
        assert Agent.objects.get(id=agent.id).llm_base_url == ""


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"top_k": 0}, "top_k"),
        ({"min_score": 2}, "min_score"),
        ({"allowed_origins": ["https://a.example/path"]}, "allowed_origins"),
        ({"context_template": "no placeholder"}, "context_template"),
        ({"retrieval_mode": "psychic"}, "retrieval_mode"),
        ({"name": "  "}, "name"),
        ({"public_key": "ag_mine"}, "public_key"),
    ],
)
def test_bad_settings_name_the_field_and_change_nothing(api, agent, changes, field):
    response = api.patch(f"/api/v1/agents/{agent.id}", changes, format="json")
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content
    with workspace_scope(agent.workspace_id):
        assert Agent.objects.get(id=agent.id).name == "Support bot"
    assert api.post("/api/v1/agents", {"top_k": 3}, format="json").status_code == 400  # a name is required


def test_deleting_an_agent_takes_its_sources_and_passages_with_it(api, workspace, agent):
    index_text(workspace, agent, "Kettles", "Every kettle has a two-year warranty.")
    with workspace_scope(workspace.id):
        assert Chunk.objects.exists()
    assert api.delete(f"/api/v1/agents/{agent.id}").status_code == 204
    with workspace_scope(workspace.id):
        assert not Agent.objects.exists() and not Source.objects.exists() and not Chunk.objects.exists()
    assert api.get(f"/api/v1/agents/{agent.id}").status_code == 404


def test_an_outsider_gets_404_on_every_agent_endpoint(outsider_api, agent):
    base = f"/api/v1/agents/{agent.id}"
    assert outsider_api.get(base).status_code == 404
    assert outsider_api.patch(base, {"name": "Mine now"}, format="json").status_code == 404
    assert outsider_api.delete(base).status_code == 404
    assert outsider_api.get("/api/v1/agents").json()["results"] == []
    with workspace_scope(agent.workspace_id):
        assert Agent.objects.get(id=agent.id).name == "Support bot"


def test_a_member_reads_agents_but_cannot_change_them(member, agent):
    client = APIClient()
    client.force_login(member)
    assert client.get("/api/v1/agents").status_code == 200
    assert client.get(f"/api/v1/agents/{agent.id}").status_code == 200
    assert client.patch(f"/api/v1/agents/{agent.id}", {"name": "x"}, format="json").status_code == 403
    assert client.delete(f"/api/v1/agents/{agent.id}").status_code == 403
    assert client.post("/api/v1/agents", {"name": "x"}, format="json").status_code == 403


def test_the_widget_and_documents_apis_still_answer_beside_the_agents_api(api, client, agent):
    put = api.put(f"/api/v1/agents/{agent.id}/documents/faq", {"text": "Kettles boil fast."}, format="json")
    assert put.status_code == 202
    assert api.get(f"/api/v1/agents/{agent.id}/documents").json()["results"][0]["external_id"] == "faq"
    api.put(f"/api/v1/agents/{agent.id}/documents/care", {"title": "Care", "text": "Descale."}, format="json")
    found = api.get(f"/api/v1/agents/{agent.id}/documents", {"q": "care"}).json()
    assert found["count"] == 1 and found["results"][0]["external_id"] == "care"
    init = client.post(
        f"/api/v1/agents/{agent.public_key}/widget/init",
        {},
        content_type="application/json",
        HTTP_ORIGIN="https://acme.example",
    )
    assert init.status_code == 200 and init.json()["name"] == "Support bot"
    # A public key is never mistaken for an id, nor an id for a public key.
    assert api.get(f"/api/v1/agents/{agent.public_key}").status_code == 404
    assert (
        client.post(
            f"/api/v1/agents/{agent.id}/chat",
            {"message": "hi"},
            content_type="application/json",
            HTTP_ORIGIN="https://acme.example",
        ).status_code
        == 404
    )


def test_the_api_answers_members_and_hides_the_agent_from_outsiders(agent, api, member, outsider_api):
    with workspace_scope(agent.workspace_id):
        agent.allowed_origins = []
        agent.save()
    response = api.get(f"/api/v1/agents/{agent.id}/doctor")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "error"
    assert {"knowledge", "origins"} <= {f["check"] for f in body["findings"]}
    assert all(set(f) == {"check", "severity", "problem", "action", "detail"} for f in body["findings"])
    client = APIClient()
    client.force_login(member)
    assert client.get(f"/api/v1/agents/{agent.id}/doctor").status_code == 200
    missing = outsider_api.get(f"/api/v1/agents/{agent.id}/doctor")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert api.post(f"/api/v1/agents/{agent.id}/doctor").status_code == 405
