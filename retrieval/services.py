"""Searching passages, always within one workspace (writing their vectors: retrieval/vectors.py).

Search runs the vector and keyword retrievers with the same filters and floor, scores every
candidate by both (so each hit's score is the stronger of its cosine and keyword score), fuses the two
rankings, optionally reranks, and only then cuts to top_k.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection

from config import metrics
from config.backends import embedders, rerankers, vector_stores
from config.redis_cache import Alongside
from retrieval import cache as semantic_cache
from retrieval import keyword, providers, resident, sentences
from retrieval.embedders.base import Embedder
from retrieval.fusion import FUSIONS
from retrieval.stores.base import Filters, VectorHit, validate_filters
from retrieval.vectors import stale_embeddings
from sources.models import Chunk, Source, Workspace
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)
MODES = ("hybrid", "vector", "keyword")


@dataclass(frozen=True)
class SearchParams:
    top_k: int = 5
    min_score: float | None = None
    mode: str = "hybrid"
    fusion: str = field(default_factory=lambda: settings.SEARCH_FUSION)
    vector_weight: float = field(default_factory=lambda: settings.SEARCH_VECTOR_WEIGHT)
    keyword_weight: float = field(default_factory=lambda: settings.SEARCH_KEYWORD_WEIGHT)
    candidates: int = 50
    filters: Filters | None = None
    rerank: str | None = None
    rerank_pool: int = 50  # passages the reranker reorders
    # The agent's semantic cache (search_passages with an agent): off, or its knobs; None is the
    # deployment's SEMANTIC_CACHE_* setting.
    semantic_cache: bool = True
    cache_threshold: float | None = None
    cache_max_entries: int | None = None
    cache_ttl: int | None = None
    # The sentence-vector rescoring of a hybrid search's head (retrieval/sentences.py): weights of chunk
    # cosine, best-sentence cosine and BM25, and how many fused candidates; all 0 (the deployment makes
    # no sentence vectors) is off. Part of the params, so cached searches never outlive a change.
    sentence_weights: tuple[float, float, float] = field(default_factory=lambda: sentences.default_weights())
    sentence_candidates: int = field(default_factory=lambda: settings.SEARCH_SENTENCE_CANDIDATES)
    # BM25's k1 and b; None is the workspace's (Workspace.bm25_k1, bm25_b), read before the search.
    bm25_k1: float | None = None
    bm25_b: float | None = None

    def __post_init__(self) -> None:
        if self.candidates < 1 or self.rerank_pool < 1:
            raise ValueError("candidates and rerank_pool must be at least 1")
        if len(self.sentence_weights) != 3 or min(self.sentence_weights) < 0:
            raise ValueError("sentence_weights must be three weights of 0 or more")
        if self.bm25_k1 is not None and not 0 <= self.bm25_k1 <= 3:
            raise ValueError("bm25_k1 must be between 0 and 3")
        if self.bm25_b is not None and not 0 <= self.bm25_b <= 1:
            raise ValueError("bm25_b must be between 0 and 1")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {sorted(FUSIONS)}")
        validate_filters(self.filters)


def with_workspace_bm25(params: SearchParams, workspace_id: int) -> SearchParams:
    """The params with the workspace's BM25 k1 and b where they are not given (one primary-key read;
    callers holding the workspace, like the search API, pass them). Resolved before any cache key is
    made, so a changed setting never serves answers ranked with the old one."""
    if params.bm25_k1 is not None and params.bm25_b is not None:
        return params
    k1, b = Workspace.objects.filter(id=workspace_id).values_list("bm25_k1", "bm25_b").first() or (
        keyword.K1,
        keyword.B,
    )
    return replace(
        params,
        bm25_k1=k1 if params.bm25_k1 is None else params.bm25_k1,
        bm25_b=b if params.bm25_b is None else params.bm25_b,
    )


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    text: str
    score: float
    source_id: int
    source_title: str
    source_kind: str
    url: str
    document_id: int
    document_title: str
    vector_score: float | None = None
    keyword_score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


_embedding_lock = threading.Lock()
_embedding_pool: ThreadPoolExecutor | None = None
#: Queries embedded at once per process while their keyword searches run (more wait for a thread).
EMBEDDING_THREADS = 4


def _embed_meanwhile(embedder: Embedder, query: str) -> Future[np.ndarray]:
    global _embedding_pool
    with _embedding_lock:
        if _embedding_pool is None:
            _embedding_pool = ThreadPoolExecutor(EMBEDDING_THREADS, thread_name_prefix="embed-query")
    return _embedding_pool.submit(contextvars.copy_context().run, embedder.embed_query, query)


def search_hits(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams,
    vector: np.ndarray | None = None,
    embedder: Embedder | None = None,
    hidden_sources: frozenset[int] | None = None,
    held: resident.ResidentVectors | None = None,
) -> list[tuple[VectorHit, float, float]]:
    """Ranked (hit, vector score, keyword score) for a query; the hit's score is the reported one.
    `embedder`: the one that embedded the chunks searched (an agent's own), whose vectors alone are
    compared with the query's. `hidden_sources`: see _without_hidden_sources. `held`: the workspace's
    vectors held in memory for this search (_resident_vectors), searched instead of the store's."""
    store = vector_stores["default"]
    embedder = embedder or embedders["default"]
    want_vector = params.mode in ("hybrid", "vector")
    want_keyword = params.mode in ("hybrid", "keyword")
    terms = keyword.term_counts(query) if want_keyword else {}
    common = {"workspace_id": workspace_id, "min_score": params.min_score, "filters": params.filters}
    # search_passages / search_workspace have put the workspace's in; a direct caller gets the defaults.
    bm25 = {
        "k1": keyword.K1 if params.bm25_k1 is None else params.bm25_k1,
        "b": keyword.B if params.bm25_b is None else params.bm25_b,
    }
    if params.mode == "hybrid":
        # The query is embedded in another thread (ONNX releases the GIL) while the store searches its
        # keywords in this one, on this thread's database connection.
        embedding = _embed_meanwhile(embedder, query) if vector is None else None
        query_vector = embedding.result if embedding is not None else lambda: vector
        if held is not None and held.postings is not None:  # the whole search in memory
            hits = resident.hybrid_search(
                held, vector=query_vector, terms=terms, top_k=params.candidates,
                min_score=params.min_score, filters=params.filters, **bm25,
            )  # fmt: skip
        else:
            hits = store.hybrid_search(
                vector=query_vector,
                terms=terms,
                top_k=params.candidates,
                model_name=embedder.model_name,
                resident=held,
                **bm25,
                **common,
            )
        vector_scores, keyword_scores = hits.vector_scores, hits.keyword_scores
        rankings = [hits.by_vector, hits.by_keyword]
        if params.fusion == "absolute":  # adds scores as they are: each candidate's own two
            rankings = [
                [VectorHit(c, s) for c, s in scores.items()] for scores in (vector_scores, keyword_scores)
            ]
        fused = FUSIONS[params.fusion](rankings, [params.vector_weight, params.keyword_weight])
        order = sorted(fused, key=lambda cid: (-fused[cid], cid))
        order = sentences.rescored(
            order,
            weights=params.sentence_weights,
            fusion=params.fusion,
            vector_weight=params.vector_weight,
            keyword_weight=params.keyword_weight,
            candidates=params.sentence_candidates,
            workspace_id=workspace_id,
            vector=query_vector,
            model_name=embedder.model_name,
            vector_scores=vector_scores,
            keyword_scores=keyword_scores,
            held=held,
        )
    elif want_vector:
        vector = embedder.embed_query(query) if vector is None else vector
        if held is not None:
            by_vector = held.top(vector, params.candidates, params.min_score, held.mask(params.filters))
        else:
            by_vector = store.search(
                vector=vector, top_k=params.candidates, model_name=embedder.model_name, **common
            )
        vector_scores, keyword_scores = {h.chunk_id: h.score for h in by_vector}, {}
        order = [h.chunk_id for h in by_vector]
    else:
        if held is not None and held.postings is not None:
            scored, mask = held.bm25(terms, **bm25), held.mask(params.filters)
            by_keyword = held.keyword_top(scored, params.candidates, params.min_score, mask)
        else:
            by_keyword = store.keyword_search(terms=terms, top_k=params.candidates, **bm25, **common)
        vector_scores, keyword_scores = {}, {h.chunk_id: h.score for h in by_keyword}
        order = [h.chunk_id for h in by_keyword]

    order = _without_hidden_sources(workspace_id, order, hidden_sources)
    ranked = []
    for cid in order:
        v, k = vector_scores.get(cid, 0.0), keyword_scores.get(cid, 0.0)
        score = max(0.0, min(1.0, max(v, k)))
        if params.min_score is not None and score < params.min_score:
            continue
        ranked.append((VectorHit(chunk_id=cid, score=score), v, k))
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
    model_name = providers.embedder_for(_one_agent(params.filters)).model_name
    params = with_workspace_bm25(params, workspace_id)
    key = semantic_cache.search_key({"query": query, "model": model_name, **asdict(params)})
    deployment_model = embedders["default"].model_name
    found = semantic_cache.search_lookup(
        workspace_id=workspace_id, key=key, model_name=deployment_model, alongside=alongside
    )
    if found.cached is not None:
        passages = [Passage(**_passage_fields(p)) for p in found.cached.passages]
        return SearchResult(passages=passages, stale_chunks=found.cached.stale_chunks, cached=True)
    facts = found.facts or _facts_counted(workspace_id, found.generation)
    passages, reranked_as_asked = _search_passages(
        workspace_id=workspace_id,
        query=query,
        params=params,
        hidden_sources=facts.hidden_sources,
        generation=found.generation,
    )
    if found.generation is not None and reranked_as_asked:  # a reranker's failure is not kept for later
        store = functools.partial(
            semantic_cache.search_store,
            workspace_id=workspace_id,
            key=key,
            generation=found.generation,
            # Each passage's own fields, shallow: the cache pickles them when stored (asdict's deep copy
            # of every metadata dict cost ~0.2 ms a search).
            passages=[dict(vars(p)) for p in passages],
            stale_chunks=facts.stale_chunks,
        )
        if defer is not None:
            defer(store)
        else:
            store()
    return SearchResult(passages=passages, stale_chunks=facts.stale_chunks, cached=False)


_PASSAGE_FIELDS = frozenset(Passage.__dataclass_fields__)


def _passage_fields(cached: dict[str, Any]) -> dict[str, Any]:
    """A cached passage's own fields (the cache adds the workspace it was found in)."""
    return {name: value for name, value in cached.items() if name in _PASSAGE_FIELDS}


def _facts_counted(workspace_id: int, generation: str | None) -> semantic_cache.WorkspaceFacts:
    """The workspace's facts from the database, kept in the cache for `generation` (read before them)."""
    facts = semantic_cache.WorkspaceFacts(
        hidden_sources=frozenset(_hidden_sources(workspace_id)),
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


def _one_agent(filters: Filters | None) -> int | None:
    """The agent a search is filtered to, when it is exactly one."""
    agents = validate_filters(filters).get("agent_id") or []
    if len(agents) == 1 and isinstance(agents[0], int) and not isinstance(agents[0], bool):
        return agents[0]
    return None


def _hidden_sources(workspace_id: int) -> list[int]:
    with workspace_scope(workspace_id):
        return list(Source.objects.filter(paused=True, hidden_while_paused=True).values_list("id", flat=True))


def _without_hidden_sources(
    workspace_id: int, chunk_ids: list[str], hidden: frozenset[int] | None = None
) -> list[str]:
    """Drop chunks of sources paused with "leave out of search": kept in the store, never found. Applied on
    top of the stores' own workspace and metadata filters (which stay as they are), so both stores and the
    semantic cache (invalidated when a source is paused) agree. `hidden`: the hidden sources, when the
    caller knows them (the search cache keeps them per generation); otherwise one indexed query finds them."""
    if not chunk_ids:
        return chunk_ids
    hidden = _hidden_sources(workspace_id) if hidden is None else hidden
    if not hidden:
        return chunk_ids
    with workspace_scope(workspace_id):
        dropped = {
            str(i)
            for i in Chunk.objects.filter(id__in=chunk_ids, source_id__in=list(hidden)).values_list(
                "id", flat=True
            )
        }
    return [cid for cid in chunk_ids if cid not in dropped]


def search_passages(
    *, workspace_id: int, query: str, params: SearchParams | None = None, agent_id: int | None = None
) -> list[Passage]:
    """Passages for a query. With an agent, only that agent's sources are searched, and the agent's
    semantic cache may answer for a query close enough to a recent one."""
    return _search_passages(workspace_id=workspace_id, query=query, params=params, agent_id=agent_id)[0]


def _search_passages(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams | None = None,
    agent_id: int | None = None,
    hidden_sources: frozenset[int] | None = None,
    generation: str | None = None,
) -> tuple[list[Passage], bool]:
    """The passages, and whether the reranker asked for (if any) ranked them."""
    params = with_workspace_bm25(params or SearchParams(), workspace_id)
    with metrics.timed(metrics.SEARCH_SECONDS, mode=params.mode):
        return _searched(
            workspace_id=workspace_id,
            query=query,
            params=params,
            agent_id=agent_id,
            hidden_sources=hidden_sources,
            generation=generation,
        )


def _searched(
    *,
    workspace_id: int,
    query: str,
    params: SearchParams,
    agent_id: int | None,
    hidden_sources: frozenset[int] | None,
    generation: str | None,
) -> tuple[list[Passage], bool]:
    if agent_id is None:
        # Filtered to one agent: that agent's embedder (its vectors are only comparable with its own).
        # Across agents, the deployment's: agents with their own provider are then found by keywords only.
        embedder = providers.embedder_for(_one_agent(params.filters))
        held = _resident_vectors(workspace_id, embedder, params, generation)
        ranked = search_hits(
            workspace_id=workspace_id,
            query=query,
            params=params,
            embedder=embedder,
            hidden_sources=hidden_sources,
            held=held,
        )
    else:
        params = replace(params, filters={**(params.filters or {}), "agent_id": agent_id})
        # The agent's chunks were embedded by its embedder: so is the question, and only vectors of that
        # model are compared (search_hits), whichever provider the agent uses.
        embedder = providers.embedder_for(agent_id)
        # Read before the search, as the search API does: the agent's chunks may then be searched in a
        # copy of the workspace held in memory, masked to the agent's sources, and the hidden sources
        # are the generation's (counted once per generation, as the search API counts them).
        found = semantic_cache.search_lookup(
            workspace_id=workspace_id, key=None, model_name=embedders["default"].model_name
        )
        if hidden_sources is None and found.generation is not None:
            hidden_sources = (found.facts or _facts_counted(workspace_id, found.generation)).hidden_sources
        held = _resident_vectors(workspace_id, embedder, params, found.generation)
        with metrics.timed(metrics.EMBED_SECONDS, purpose="query"):
            vector = embedder.embed_query(query)
        policy = semantic_cache.CachePolicy.of(params)
        # The model is part of the key: a cached answer is never reused across vector spaces.
        params_key = semantic_cache.params_key({**asdict(params), "model": embedder.model_name})
        ranked = None
        if policy.enabled:
            ranked = semantic_cache.lookup(
                workspace_id=workspace_id,
                agent_id=agent_id,
                vector=vector,
                params_key=params_key,
                policy=policy,
            )
            metrics.semantic_cache_lookup(hit=ranked is not None)
        if ranked is None:
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
    candidates = ranked[: max(params.top_k, params.rerank_pool) if params.rerank else params.top_k]
    passages = _load_passages(workspace_id, candidates, held)
    reranked_as_asked = True
    if params.rerank and passages:
        reranked = _rerank(query, passages, params.rerank, pool=max(params.top_k, params.rerank_pool))
        reranked_as_asked = reranked is not None
        passages = reranked if reranked is not None else passages
    return passages[: params.top_k], reranked_as_asked


def _rerank(query: str, passages: list[Passage], alias: str, pool: int = 50) -> list[Passage] | None:
    """Reorder the first `pool` passages by a reranker's scores; None (logged) on any failure or invalid
    score, and the caller keeps the retrieval order."""
    candidates = passages[:pool]
    try:
        scores = rerankers[alias].rerank(query, [p.text for p in candidates])
        valid = len(scores) == len(candidates) and all(
            isinstance(s, int | float) and not isinstance(s, bool) and np.isfinite(s) for s in scores
        )
    except Exception:
        log.warning("reranker %r failed; keeping the retrieval order", alias, exc_info=True)
        return None
    if not valid:
        log.warning("reranker %r returned invalid scores; keeping the retrieval order", alias)
        return None
    order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))
    return [candidates[i] for i in order] + passages[pool:]


# What a passage shows, in one statement written out: a chunk's vector and its document's full text are
# large (loading them took ~85 % of a 200-passage search on SciFact), and building this query through the
# ORM took ~1 ms of a cached search's ~6 (docs/BENCHMARKS.md). The workspace is in the WHERE clause as
# the tenant manager would put it.
PASSAGES_SQL = (
    f"SELECT {resident.SHOWN} FROM {resident.SHOWN_FROM}"
    ' WHERE c."workspace_id" = %s AND c."id" = ANY(%s::uuid[])'
)


def _load_passages(
    workspace_id: int,
    ranked: list[tuple[VectorHit, float, float]],
    copy: resident.ResidentVectors | None = None,
) -> list[Passage]:
    """The ranked chunks' passages, from the copy searched when there is one (no statement), else
    from the database."""
    if not ranked:
        return []
    wanted = [h.chunk_id for h, _, _ in ranked]
    chunks = copy.shown_rows(wanted) if copy is not None else {}
    if len(chunks) < len(wanted):  # no copy, or a chunk of another model (keyword-found) is not a row
        with connection.cursor() as cursor:
            cursor.execute(PASSAGES_SQL, [int(workspace_id), [c for c in wanted if c not in chunks]])
            chunks.update({row[0]: row for row in cursor.fetchall()})
    passages = []
    for hit, vector_score, keyword_score in ranked:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:  # deleted between the search and now
            continue
        _, text, metadata, source_id, source_title, source_kind, document_id, url, document_title = chunk
        passages.append(
            Passage(
                chunk_id=hit.chunk_id,
                text=text,
                score=hit.score,
                source_id=source_id,
                source_title=source_title,
                source_kind=source_kind,
                url=url,
                document_id=document_id,
                document_title=document_title,
                vector_score=vector_score,
                keyword_score=keyword_score,
                metadata=json.loads(metadata),
            )
        )
    return passages
