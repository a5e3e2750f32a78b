"""What an agent's settings resolve to when it answers: its model, its instructions and how it searches
(the admin's test panel searches the same way as the chat)."""

from __future__ import annotations

from agents import prompts
from agents.llm.base import ChatModel
from agents.llm.openai import OpenAIChatModel
from agents.models import Agent
from retrieval.services import SearchParams


def chat_model_for(agent: Agent) -> ChatModel | None:
    if not agent.uses_llm:
        return None
    return OpenAIChatModel(base_url=agent.llm_base_url, model=agent.llm_model, api_key=agent.llm_api_key)


SCOPE_RULES_HEADING = "Stay within this scope, set by the site's owner; decline anything outside it:"


def system_prompt(agent: Agent) -> str:
    """The agent's instructions (or the default), with its scope rules while the scope gate is on: the
    gate refuses unbacked questions in code, the rules keep a configured model on topic within answers."""
    base = agent.system_prompt.strip() or prompts.DEFAULT_SYSTEM_PROMPT
    rules = agent.scope_rules.strip()
    if rules and agent.gate_enabled:
        return f"{base}\n\n{SCOPE_RULES_HEADING}\n{rules}"
    return base


def agent_search_params(agent: Agent, audiences: list[str]) -> SearchParams:
    """How an agent searches, for its chat and for the admin's test panel alike."""
    deployment = SearchParams()  # the operator's fusion and weights, where the agent keeps the default
    return SearchParams(
        top_k=agent.top_k,
        min_score=agent.min_score,
        mode="hybrid" if agent.hybrid else "vector",
        fusion=agent.fusion or deployment.fusion,
        vector_weight=deployment.vector_weight if agent.vector_weight is None else agent.vector_weight,
        keyword_weight=deployment.keyword_weight if agent.keyword_weight is None else agent.keyword_weight,
        candidates=agent.candidates,
        rerank=agent.reranker or None,
        rerank_pool=agent.rerank_pool,
        semantic_cache=agent.semantic_cache,
        cache_threshold=agent.cache_threshold,
        cache_max_entries=agent.cache_max_entries,
        cache_ttl=agent.cache_ttl,
        # Every chunk carries its audiences ("public" unless the source says otherwise); a visitor sees
        # public passages plus those of the audiences their signed token grants.
        filters={"audience": ["public", *audiences]},
    )
