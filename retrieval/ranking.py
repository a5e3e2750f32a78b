"""The ranking core: a query's chunks ranked within one workspace.

The vector and keyword retrievers run with the same filters and floor; every candidate is scored by
both (so each hit's score is the stronger of its cosine and keyword score), the two rankings are fused
and the head rescored by sentence vectors (retrieval/sentences.py), sources left out of search are
dropped, and the floor is applied. The caller cuts to top_k (after a reranker, if any).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from config.backends import embedders, vector_stores
from retrieval import keyword, resident, sentences
from retrieval.embedders.base import Embedder
from retrieval.fusion import FUSIONS
from retrieval.params import SearchParams
from retrieval.stores.base import VectorHit
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope

_embedding_lock = threading.Lock()
_embedding_pool: ThreadPoolExecutor | None = None
#: Queries embedded at once per process while their keyword searches run (more wait for a thread).
EMBEDDING_THREADS = 4


class Candidates(NamedTuple):
    """One retriever's (or the fused) candidates, best first, with each one's own two scores."""

    order: list[str]
    vector_scores: dict[str, float]
    keyword_scores: dict[str, float]


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
    vectors held in memory for this search (retrieval/services.py reads them), searched instead of the
    store's."""
    embedder = embedder or embedders["default"]
    if params.mode == "hybrid":
        found = _hybrid(workspace_id, query, params, vector, embedder, held)
    elif params.mode == "vector":
        found = _by_vector(workspace_id, query, params, vector, embedder, held)
    else:
        found = _by_keyword(workspace_id, query, params, held)
    order = _without_hidden_sources(workspace_id, found.order, hidden_sources)
    return _floored(order, found, params.min_score)


def _bm25(params: SearchParams) -> dict[str, float]:
    # search_passages / search_workspace have put the workspace's in; a direct caller gets the defaults.
    return {
        "k1": keyword.K1 if params.bm25_k1 is None else params.bm25_k1,
        "b": keyword.B if params.bm25_b is None else params.bm25_b,
    }


def _common(workspace_id: int, params: SearchParams) -> dict[str, Any]:
    """What every store search is given: the workspace, the floor and the filters."""
    return {"workspace_id": workspace_id, "min_score": params.min_score, "filters": params.filters}


def _hybrid(
    workspace_id: int,
    query: str,
    params: SearchParams,
    vector: np.ndarray | None,
    embedder: Embedder,
    held: resident.ResidentVectors | None,
) -> Candidates:
    """Both retrievers, fused, the head rescored by sentence vectors."""
    terms = keyword.term_counts(query)
    query_vector = _query_vector(embedder, query, vector)
    if held is not None and held.postings is not None:  # the whole search in memory
        hits = resident.hybrid_search(
            held, vector=query_vector, terms=terms, top_k=params.candidates,
            min_score=params.min_score, filters=params.filters, **_bm25(params),
        )  # fmt: skip
    else:
        hits = vector_stores["default"].hybrid_search(
            vector=query_vector,
            terms=terms,
            top_k=params.candidates,
            model_name=embedder.model_name,
            resident=held,
            **_bm25(params),
            **_common(workspace_id, params),
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
    return Candidates(order, vector_scores, keyword_scores)


def _by_vector(
    workspace_id: int,
    query: str,
    params: SearchParams,
    vector: np.ndarray | None,
    embedder: Embedder,
    held: resident.ResidentVectors | None,
) -> Candidates:
    vector = embedder.embed_query(query) if vector is None else vector
    if held is not None:
        by_vector = held.top(vector, params.candidates, params.min_score, held.mask(params.filters))
    else:
        by_vector = vector_stores["default"].search(
            vector=vector,
            top_k=params.candidates,
            model_name=embedder.model_name,
            **_common(workspace_id, params),
        )
    return Candidates([h.chunk_id for h in by_vector], {h.chunk_id: h.score for h in by_vector}, {})


def _by_keyword(
    workspace_id: int, query: str, params: SearchParams, held: resident.ResidentVectors | None
) -> Candidates:
    terms, bm25 = keyword.term_counts(query), _bm25(params)
    if held is not None and held.postings is not None:
        scored, mask = held.bm25(terms, **bm25), held.mask(params.filters)
        by_keyword = held.keyword_top(scored, params.candidates, params.min_score, mask)
    else:
        by_keyword = vector_stores["default"].keyword_search(
            terms=terms, top_k=params.candidates, **bm25, **_common(workspace_id, params)
        )
    return Candidates([h.chunk_id for h in by_keyword], {}, {h.chunk_id: h.score for h in by_keyword})


def _floored(
    order: list[str], found: Candidates, min_score: float | None
) -> list[tuple[VectorHit, float, float]]:
    """Each candidate scored by the stronger of its two scores (clamped to 0..1), those under the floor
    left out."""
    ranked = []
    for cid in order:
        v, k = found.vector_scores.get(cid, 0.0), found.keyword_scores.get(cid, 0.0)
        score = max(0.0, min(1.0, max(v, k)))
        if min_score is not None and score < min_score:
            continue
        ranked.append((VectorHit(chunk_id=cid, score=score), v, k))
    return ranked


def _query_vector(embedder: Embedder, query: str, vector: np.ndarray | None) -> Callable[[], np.ndarray]:
    """The query's vector when it is asked for: the one given, or the query embedded in another thread
    (ONNX releases the GIL) while the store searches its keywords in this one, on this thread's database
    connection."""
    if vector is None:
        return _embed_meanwhile(embedder, query).result
    given = vector
    return lambda: given


def _embed_meanwhile(embedder: Embedder, query: str) -> Future[np.ndarray]:
    global _embedding_pool
    with _embedding_lock:
        if _embedding_pool is None:
            _embedding_pool = ThreadPoolExecutor(EMBEDDING_THREADS, thread_name_prefix="embed-query")
    return _embedding_pool.submit(contextvars.copy_context().run, embedder.embed_query, query)


def hidden_sources(workspace_id: int) -> list[int]:
    """Sources paused with "leave out of search"."""
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
    hidden_ids = hidden_sources(workspace_id) if hidden is None else hidden
    if not hidden_ids:
        return chunk_ids
    with workspace_scope(workspace_id):
        dropped = {
            str(i)
            for i in Chunk.objects.filter(id__in=chunk_ids, source_id__in=list(hidden_ids)).values_list(
                "id", flat=True
            )
        }
    return [cid for cid in chunk_ids if cid not in dropped]
