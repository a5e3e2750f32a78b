"""Searching passages, always within one workspace: the two entry points (writing their vectors:
retrieval/vectors.py).

`search_workspace` is the search API's: the same question asked again before the workspace's knowledge
changes is answered from the search cache. `search_passages` is everyone else's: with an agent (the chat),
the agent's semantic cache may answer for a question close enough to a recent one. Both go through one
path, `_search`: what the search cache holds for the workspace is read before the search (its generation,
the answer to the question if there is one, the workspace's facts), the chunks are ranked
(retrieval/ranking.py), their passages loaded and reranked (retrieval/passages.py), and an answer is kept
under the generation read before. The parameters a search takes: retrieval/params.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from config import metrics
from config.backends import embedders, vector_stores
from config.redis_cache import Alongside
from retrieval import cache as semantic_cache
from retrieval import providers, resident
from retrieval.embedders.base import Embedder
from retrieval.params import SearchParams, one_agent, with_workspace_bm25
from retrieval.passages import Passage, load_passages, rerank
from retrieval.ranking import hidden_sources, search_hits
from retrieval.stores.base import VectorHit
from retrieval.vectors import stale_embeddings

# The public front: callers import a search's parameters and passages from here with its entry points.
__all__ = [
    "Passage",
    "SearchParams",
    "SearchResult",
    "search_passages",
    "search_workspace",
    "with_workspace_bm25",
]

#: What is read from the search cache when a search reads nothing from it: no generation, no answer.
_NOT_LOOKED_UP = semantic_cache.SearchLookup(None, None, None)


@dataclass(frozen=True)
class SearchResult:
    passages: list[Passage]
    #: chunks embedded by another model than the configured one: invisible to vector search until reindexed
    stale_chunks: int
    cached: bool


def search_workspace(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams,
    defer: Callable[[Callable[[], None]], None] | None = None,
    alongside: Alongside | None = None,
) -> SearchResult:
    """The search API's search. The same question with the same settings, asked again before the
    workspace's knowledge changes, is answered from the search cache: no embedding, no search and no
    query, the passages as they were found (retrieval/cache.py says what keeps them current). A new
    question reads the workspace's hidden sources and reindex notice from the cache too, in the same
    round trip, once they were counted for the current generation. `defer`: given the storing of a new
    answer in the cache, runs it later (the search API: once its response is sent); else it runs now.
    `alongside`: Redis commands sent in the cache lookup's round trip (the search API's rate count), whose
    replies are handled before anything else is done (and may stop the search by raising)."""
    # Filtered to one agent: that agent's embedder (its vectors are only comparable with its own).
    # Across agents, the deployment's: agents with their own provider are then found by keywords only.
    embedder = providers.embedder_for(one_agent(params.filters))
    params = with_workspace_bm25(params, workspace_id)
    key = semantic_cache.search_key({"query": query, "model": embedder.model_name, **asdict(params)})
    return _search(
        workspace_id=workspace_id,
        query=query,
        params=params,
        embedder=embedder,
        key=key,
        defer=defer,
        alongside=alongside,
    )


def search_passages(
    *, workspace_id: int, query: str, params: SearchParams | None = None, agent_id: int | None = None
) -> list[Passage]:
    """Passages for a query. With an agent, only that agent's sources are searched, and the agent's
    semantic cache may answer for a query close enough to a recent one."""
    params = with_workspace_bm25(params or SearchParams(), workspace_id)
    if agent_id is None:
        # Outside both caches: nothing is read from the search cache, so no copy held under its
        # generation is searched and the hidden sources are read from the database.
        embedder = providers.embedder_for(one_agent(params.filters))
        return _search(
            workspace_id=workspace_id, query=query, params=params, embedder=embedder, reads_cache=False
        ).passages
    params = replace(params, filters={**(params.filters or {}), "agent_id": agent_id})
    # The agent's chunks were embedded by its embedder: so is the question, and only vectors of that
    # model are compared (search_hits), whichever provider the agent uses.
    embedder = providers.embedder_for(agent_id)
    return _search(
        workspace_id=workspace_id, query=query, params=params, embedder=embedder, agent_id=agent_id
    ).passages


def _search(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams,
    embedder: Embedder,
    key: str | None = None,
    agent_id: int | None = None,
    reads_cache: bool = True,
    defer: Callable[[Callable[[], None]], None] | None = None,
    alongside: Alongside | None = None,
) -> SearchResult:
    """Every search's one path through the search cache. Read first, in one round trip: the workspace's
    generation, the answer kept for `key` (the question; None: no answer is kept, as for an agent's chat)
    and the workspace's facts, counted once per generation. Then the chunks are ranked (an agent's through
    its semantic cache), on a copy of the workspace held in memory under that generation when there is
    one, and an answer is kept under the generation read before the search."""
    found = _looked_up(workspace_id, key, alongside) if reads_cache else _NOT_LOOKED_UP
    if found.cached is not None:
        passages = [Passage(**_passage_fields(p)) for p in found.cached.passages]
        return SearchResult(passages=passages, stale_chunks=found.cached.stale_chunks, cached=True)
    facts = found.facts
    # An answer carries the reindex notice, counted even when the cache is off; a chat needs only the
    # hidden sources, which the ranking reads itself when there is no generation to keep them under.
    if facts is None and (key is not None or found.generation is not None):
        facts = _facts_counted(workspace_id, found.generation)
    with metrics.timed(metrics.SEARCH_SECONDS, mode=params.mode):
        passages, reranked_as_asked = _ranked_passages(
            workspace_id=workspace_id,
            query=query,
            params=params,
            embedder=embedder,
            agent_id=agent_id,
            hidden_sources=facts.hidden_sources if facts is not None else None,
            generation=found.generation,
        )
    stale_chunks = facts.stale_chunks if facts is not None else 0
    if key is not None and found.generation is not None and reranked_as_asked:
        # A reranker's failure is not kept for later.
        store = functools.partial(
            semantic_cache.search_store,
            workspace_id=workspace_id,
            key=key,
            generation=found.generation,
            passages=[asdict(p) for p in passages],
            stale_chunks=stale_chunks,
        )
        if defer is not None:
            defer(store)
        else:
            store()
    return SearchResult(passages=passages, stale_chunks=stale_chunks, cached=False)


def _looked_up(
    workspace_id: int, key: str | None, alongside: Alongside | None
) -> semantic_cache.SearchLookup:
    return semantic_cache.search_lookup(
        workspace_id=workspace_id, key=key, model_name=embedders["default"].model_name, alongside=alongside
    )


_PASSAGE_FIELDS = frozenset(Passage.__dataclass_fields__)


def _passage_fields(cached: dict[str, Any]) -> dict[str, Any]:
    """A cached passage's own fields (the cache adds the workspace it was found in)."""
    return {name: value for name, value in cached.items() if name in _PASSAGE_FIELDS}


def _facts_counted(workspace_id: int, generation: str | None) -> semantic_cache.WorkspaceFacts:
    """The workspace's facts from the database, kept in the cache for `generation` (read before them)."""
    facts = semantic_cache.WorkspaceFacts(
        hidden_sources=frozenset(hidden_sources(workspace_id)),
        stale_chunks=stale_embeddings(workspace_id=workspace_id),
    )
    if generation is not None:
        semantic_cache.facts_store(
            workspace_id=workspace_id,
            generation=generation,
            model_name=embedders["default"].model_name,
            facts=facts,
        )
    return facts


def _ranked_passages(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams,
    embedder: Embedder,
    agent_id: int | None,
    hidden_sources: frozenset[int] | None,
    generation: str | None,
) -> tuple[list[Passage], bool]:
    """The passages, and whether the reranker asked for (if any) ranked them."""
    held = _resident_vectors(workspace_id, embedder, params, generation)
    if agent_id is None:
        ranked = search_hits(
            workspace_id=workspace_id,
            query=query,
            params=params,
            embedder=embedder,
            hidden_sources=hidden_sources,
            held=held,
        )
    else:
        ranked = _agent_hits(
            workspace_id=workspace_id,
            query=query,
            params=params,
            embedder=embedder,
            agent_id=agent_id,
            hidden_sources=hidden_sources,
            held=held,
        )
    candidates = ranked[: max(params.top_k, params.rerank_pool) if params.rerank else params.top_k]
    passages = load_passages(workspace_id, candidates, held)
    reranked_as_asked = True
    if params.rerank and passages:
        reranked = rerank(query, passages, params.rerank, pool=max(params.top_k, params.rerank_pool))
        reranked_as_asked = reranked is not None
        passages = reranked if reranked is not None else passages
    return passages[: params.top_k], reranked_as_asked


def _agent_hits(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams,
    embedder: Embedder,
    agent_id: int,
    hidden_sources: frozenset[int] | None,
    held: resident.ResidentVectors | None,
) -> list[tuple[VectorHit, float, float]]:
    """An agent's ranked chunks, from its semantic cache when a question close enough was asked recently."""
    with metrics.timed(metrics.EMBED_SECONDS, purpose="query"):
        vector: np.ndarray = embedder.embed_query(query)
    policy = semantic_cache.CachePolicy.of(params)
    # The model is part of the key: a cached answer is never reused across vector spaces.
    params_key = semantic_cache.params_key({**asdict(params), "model": embedder.model_name})
    if policy.enabled:
        ranked = semantic_cache.lookup(
            workspace_id=workspace_id, agent_id=agent_id, vector=vector, params_key=params_key, policy=policy
        )
        metrics.semantic_cache_lookup(hit=ranked is not None)
        if ranked is not None:
            return ranked
    ranked = search_hits(
        workspace_id=workspace_id,
        query=query,
        params=params,
        vector=vector,
        embedder=embedder,
        hidden_sources=hidden_sources,
        held=held,
    )
    if policy.enabled:
        semantic_cache.store(
            workspace_id=workspace_id,
            agent_id=agent_id,
            vector=vector,
            params_key=params_key,
            hits=ranked,
            policy=policy,
        )
    return ranked


def _resident_vectors(
    workspace_id: int, embedder: Embedder, params: SearchParams, generation: str | None
) -> resident.ResidentVectors | None:
    """The workspace's vectors in memory under `generation` (the search cache's, read before the search),
    for a store that can use them: read once per search, for its hits and its passages. A filtered search
    uses them only when it can run whole in memory (the filters are masks over the copy's rows): with
    postings, or by vector alone."""
    if not vector_stores["default"].searches_resident_vectors:
        return None
    held = resident.held(workspace_id=workspace_id, model_name=embedder.model_name, generation=generation)
    if held is not None and params.filters and held.postings is None and params.mode != "vector":
        return None
    return held
