"""Per-agent retrieval, cache and scope knobs: validated alike by the settings form and the agents API, with
the deployment's defaults where an agent keeps them, and each one changing what a search or a turn does."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import override_settings

from agents.configuration import SCOPE_RULES_HEADING, agent_search_params
from retrieval.services import search_passages
from sources.tenancy import workspace_scope
from sources.web.agent_forms import AgentSettingsForm
from tests.agents.conftest import chat
from tests.factories import index_text
from tests.fakes.rerank_server import rerank_server

pytestmark = pytest.mark.django_db

FAQ = (
    "Kettles carry a two-year warranty against defects.",
    "Descale the kettle every month with white vinegar.",
    "Shipping to Canada takes five days by standard post.",
    "Returns are accepted within thirty days of delivery.",
    "The kettle's filter lifts out for cleaning under the tap.",
)


def index_faq(workspace, agent):
    """One source per answer, so each is a passage of its own."""
    for number, answer in enumerate(FAQ, start=1):
        index_text(workspace, agent, f"FAQ {number}", answer)


def save(agent, **changes):
    with workspace_scope(agent.workspace_id):
        for name, value in changes.items():
            setattr(agent, name, value)
        agent.save()
    return agent


def semantic_entries(agent) -> list:
    return cache.get(f"semcache:v1:{agent.workspace_id}:{agent.id}") or []


def search(agent, query):
    return search_passages(
        workspace_id=agent.workspace_id,
        query=query,
        params=agent_search_params(agent, []),
        agent_id=agent.id,
    )


def test_an_untuned_agent_searches_with_the_deployments_defaults(agent):
    params = agent_search_params(agent, [])
    assert (params.fusion, params.vector_weight, params.keyword_weight) == (
        settings.SEARCH_FUSION,
        settings.SEARCH_VECTOR_WEIGHT,
        settings.SEARCH_KEYWORD_WEIGHT,
    )
    assert (params.candidates, params.rerank_pool, params.semantic_cache) == (50, 50, True)
    assert params.cache_threshold is None  # the deployment's SEMANTIC_CACHE_THRESHOLD, 0.97 by default
    tuned = save(agent, fusion="rrf", vector_weight=0.0, keyword_weight=1.0, candidates=7, cache_ttl=9)
    params = agent_search_params(tuned, [])
    assert (params.fusion, params.vector_weight, params.keyword_weight) == ("rrf", 0.0, 1.0)
    assert (params.candidates, params.cache_ttl) == (7, 9)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"reranker": "http", "top_k": 8, "rerank_pool": 5}, "rerank_pool"),
        ({"vector_weight": 0, "keyword_weight": 0}, "keyword_weight"),
        ({"cache_threshold": 0.3}, "cache_threshold"),
        ({"cache_ttl": 0}, "cache_ttl"),
        ({"candidates": 0}, "candidates"),
        ({"reranker": "nope"}, "reranker"),
        ({"context_budget": 100}, "context_budget"),
        ({"fusion": "max"}, "fusion"),
    ],
)
def test_bad_values_are_refused_by_the_api_naming_the_field(api, agent, change, field):
    response = api.patch(f"/api/v1/agents/{agent.id}", change, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]


def test_the_form_refuses_what_the_api_refuses(agent):
    data = {**AgentSettingsForm(instance=agent).initial, "reranker": "http", "top_k": 8, "rerank_pool": 5}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    form = AgentSettingsForm(data=data, instance=agent)
    assert not form.is_valid() and "rerank_pool" in form.errors


def test_null_returns_a_knob_to_the_deployments_default(api, agent):
    save(agent, vector_weight=0.9, cache_threshold=0.99)
    body = api.patch(
        f"/api/v1/agents/{agent.id}", {"vector_weight": None, "cache_threshold": None}, format="json"
    ).json()
    assert body["vector_weight"] is None and body["cache_threshold"] is None


def test_the_semantic_cache_follows_the_agents_knobs(workspace, agent):
    index_faq(workspace, agent)
    search(agent, "How long is the kettle warranty?")
    assert len(semantic_entries(agent)) == 1
    # A looser threshold lets a differently worded question reuse the entry (no new one is stored)...
    save(agent, cache_threshold=0.5)
    search(agent, "kettle warranty length")
    assert len(semantic_entries(agent)) == 1
    # ...a strict one does not, and max entries caps what is kept.
    save(agent, cache_threshold=1.0, cache_max_entries=2)
    for question in ("descaling", "shipping to Canada", "returns window"):
        search(agent, question)
    assert len(semantic_entries(agent)) == 2
    cache.clear()
    save(agent, semantic_cache=False)
    search(agent, "How long is the kettle warranty?")
    assert semantic_entries(agent) == []


def test_candidates_and_the_rerank_pool_bound_what_is_considered(workspace, agent):
    index_faq(workspace, agent)
    save(agent, top_k=5, hybrid=False, semantic_cache=False)
    assert len(search(agent, "kettle")) == 5
    save(agent, candidates=2)
    assert len(search(agent, "kettle")) == 2  # one retriever, two candidates
    seen: list[str] = []

    def score(query: str, document: str) -> float:
        seen.append(document)
        return 1.0

    with rerank_server(score) as url:
        reranker = {
            "http": {"BACKEND": "retrieval.rerankers.http.HttpReranker", "OPTIONS": {"base_url": url}}
        }
        with override_settings(RERANKERS=reranker):
            save(agent, candidates=50, top_k=1, reranker="http", rerank_pool=3)
            assert len(search(agent, "kettle")) == 1
    assert len(seen) == 3


def test_scope_rules_reach_the_model_only_while_the_gate_is_on(client, llm_agent, knowledge, provider):
    save(llm_agent, scope_rules="Only kettles and shipping. Never give medical advice.")
    chat(client, llm_agent, "How long is the kettle warranty?")
    assert SCOPE_RULES_HEADING not in provider.chat_requests()[-1]["messages"][0]["content"]
    save(llm_agent, min_score=0.05, offtopic_reply="I only know about kettles.")
    chat(client, llm_agent, "How long is the kettle warranty?")
    system = provider.chat_requests()[-1]["messages"][0]["content"]
    assert f"{SCOPE_RULES_HEADING}\nOnly kettles and shipping. Never give medical advice." in system
    assert system.startswith("You are a helpful assistant")  # the default prompt stays
