"""What the schema fuzz test (test_schema_fuzz.py) found, each kept as an example, so that it stays fixed."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("domain", ["\u9be1[c\U000725ee", "http://[::1", "https://"])
def test_discover_refuses_a_domain_no_address_can_be_made_of(api, domain):
    response = api.post("/api/v1/discover", {"domain": domain}, format="json")
    assert response.status_code == 400, response.content
    assert "domain" in response.json()["error"]["fields"]


def test_errors_of_a_list_field_are_nested_by_position_as_the_schema_says(api, agent):
    from drf_spectacular.generators import SchemaGenerator
    from jsonschema import Draft202012Validator

    body = {"kind": "text", "title": "T", "content": "c", "agent": agent.id, "audiences": ["x" * 101]}
    response = api.post("/api/v1/sources", body, format="json")
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert set(fields["audiences"]) == {"0"} and isinstance(fields["audiences"]["0"], list)
    document = SchemaGenerator().get_schema(request=None, public=True)
    field_schema = document["components"]["schemas"]["ErrorDetail"]["properties"]["fields"]
    assert list(Draft202012Validator(field_schema).iter_errors(fields)) == []


@pytest.mark.parametrize(
    ("origins", "reason"),
    [
        ([0], "Not a string"),
        (["https://a.example", True], "Not a string"),
        (["https://a.example", {"host": "b.example"}], "Not a string"),
        (["https://b.example\nhttps://c.example"], "without line breaks"),
        (["https://b.example\u2028https://c.example"], "without line breaks"),
    ],
)
def test_an_agent_with_an_origin_that_is_not_text_is_refused_naming_the_item(api, agent, origins, reason):
    from agents.models import Agent
    from sources.tenancy import workspace_scope

    bad = len(origins) - 1
    created = api.post("/api/v1/agents", {"name": "Bot", "allowed_origins": origins}, format="json")
    changed = api.patch(f"/api/v1/agents/{agent.id}", {"allowed_origins": origins}, format="json")
    for response in (created, changed):
        assert response.status_code == 400, response.content
        fields = response.json()["error"]["fields"]
        assert set(fields) == {"allowed_origins"} and set(fields["allowed_origins"]) == {str(bad)}
        assert reason in fields["allowed_origins"][str(bad)][0]
    with workspace_scope(agent.workspace_id):
        assert list(Agent.objects.values_list("name", "allowed_origins")) == [
            ("Support bot", ["https://acme.example"])
        ]


def test_an_item_of_allowed_origins_that_is_not_an_origin_is_named_by_its_position(api, agent):
    origins = ["https://a.example/", "https://b.example/path"]
    response = api.patch(f"/api/v1/agents/{agent.id}", {"allowed_origins": origins}, format="json")
    assert response.status_code == 400, response.content
    assert "is not an origin" in response.json()["error"]["fields"]["allowed_origins"]["1"][0]


@pytest.mark.parametrize("base_url", ["", "http://127.0.0.1:9/v1"])
def test_an_agents_model_url_matches_the_schema_and_can_be_sent_back(api, agent, base_url):
    from urllib.parse import urlsplit

    from drf_spectacular.generators import SchemaGenerator
    from jsonschema import Draft202012Validator, FormatChecker

    from agents.models import Agent
    from sources.tenancy import workspace_scope

    with workspace_scope(agent.workspace_id):
        Agent.objects.filter(id=agent.id).update(llm_base_url=base_url)
    checker = FormatChecker()
    checker.checks("uri")(lambda value: not isinstance(value, str) or bool(urlsplit(value).scheme))
    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    served = api.get(f"/api/v1/agents/{agent.id}").json()["llm_base_url"]
    assert served == base_url
    for name in ("Agent", "AgentWriteRequest", "PatchedAgentWriteRequest"):
        field = schemas[name]["properties"]["llm_base_url"]
        assert list(Draft202012Validator(field, format_checker=checker).iter_errors(served)) == [], name
    sent_back = api.patch(f"/api/v1/agents/{agent.id}", {"llm_base_url": served}, format="json")
    assert sent_back.status_code == 200 and sent_back.json()["llm_base_url"] == base_url, sent_back.content


@pytest.mark.parametrize("path", ["/api/v1/agents", "/api/v1/sources", "/api/v1/search"])
def test_a_null_character_in_a_query_parameter_is_refused_naming_it(api, agent, path):
    response = api.get(path, {"q": "depot\x00"})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {"q": ["Null characters are not allowed."]}


def test_a_null_character_in_the_path_finds_nothing(api, agent):
    response = api.get(f"/api/v1/agents/{agent.id}/documents/door%00.md")
    assert response.status_code == 404, response.content
