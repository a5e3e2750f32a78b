"""Sentence vectors: a chunk's sentences embedded one by one, the third signal of a hybrid search.

A 2,000-character chunk's vector averages everything the chunk says, so a question matching one of its
sentences well scores only middling against it. Ingestion (settings.SENTENCE_VECTORS) embeds each
chunk's sentences too and keeps them on the chunk row, packed as float16 (a chunk of ten sentences: 7.7
KB). A hybrid search then rescores its best few fused candidates by a weighted sum of three scores that
mean the same from one query to the next: the chunk's cosine, its best sentence's cosine, and BM25 over
the query's maximum (retrieval.keyword.max_score). On SciFact's train queries this lifted nDCG@10 from
0.7358 to 0.7547, both halves of the queries alike (docs/BENCHMARKS.md, "Sentence vectors"); rescoring
only the 20 best of the fused order lost nothing against rescoring 30 or every candidate.

The rescoring answers to the search's own fusion and weights (an agent's, say), so
tuning them still changes the ranking: the chunk and sentence terms are the vector retriever's, the BM25
term the keyword retriever's, and each is scaled by how the search weighs its retriever against the
deployment's SEARCH_VECTOR_WEIGHT / SEARCH_KEYWORD_WEIGHT (searching at the deployment's weights rescores
exactly as tuned; a keyword weight of 0 leaves keyword scores out; a vector weight of 0 ranks the head in
keyword order). Reciprocal rank fusion trusts ranks only, so under "rrf" the head is ordered by the
weighted reciprocal ranks of its three scores instead of their weighted sum.

The rows are read with the chunk's own workspace and embedding model, like every vector search: sentence
vectors of another workspace or another model's space are never compared with the query.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from django.conf import settings

from retrieval.fusion import RRF_K
from retrieval.resident import ResidentVectors
from sources.models import Chunk
from sources.tenancy import workspace_scope


def pack(vectors: np.ndarray) -> bytes | None:
    """A chunk's sentence vectors (n by dimensions, unit length) as the bytes stored on its row."""
    if not len(vectors):
        return None
    return np.asarray(vectors, dtype="<f2").tobytes()


def unpack(data: bytes | memoryview, dimensions: int) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype="<f2").reshape(-1, dimensions).astype(np.float32)


def best_sentence_scores(
    *,
    workspace_id: int,
    chunk_ids: list[str],
    vector: np.ndarray,
    model_name: str,
    held: ResidentVectors | None = None,
) -> dict[str, float]:
    """Each chunk's best sentence cosine with the query, for those of `chunk_ids` that have sentence
    vectors of `model_name`: from `held`, the workspace's copy in memory of that model's rows, when it
    holds sentences, else one read."""
    packed = held.sentence_rows(chunk_ids) if held is not None else None
    if packed is None:
        with workspace_scope(workspace_id):
            rows = Chunk.objects.filter(
                id__in=chunk_ids, embedding_model=model_name, sentence_vectors__isnull=False
            ).order_by()
            packed = {str(cid): data for cid, data in rows.values_list("id", "sentence_vectors")}
    query = np.asarray(vector, dtype=np.float32)
    return {cid: float((unpack(data, len(query)) @ query).max()) for cid, data in packed.items()}


def search_weights(
    weights: tuple[float, float, float], *, vector_weight: float, keyword_weight: float
) -> tuple[float, float, float]:
    """The rescoring's (chunk, sentence, keyword) weights for a search weighing its retrievers
    `vector_weight` and `keyword_weight`: the vector terms scaled by vector_weight over the deployment's
    SEARCH_VECTOR_WEIGHT, the keyword term likewise. At the deployment's own weights they are `weights`
    unchanged. Where the deployment weighs a retriever 0 there is no ratio to keep: a search that weighs
    it at all gets the rescoring's weight for it as it is."""

    def scale(mine: float, deployment: float) -> float:
        if deployment > 0:
            return mine / deployment
        return 1.0 if mine > 0 else 0.0

    vector = scale(vector_weight, settings.SEARCH_VECTOR_WEIGHT)
    keyword = scale(keyword_weight, settings.SEARCH_KEYWORD_WEIGHT)
    chunk_w, sentence_w, keyword_w = weights
    return (chunk_w * vector, sentence_w * vector, keyword_w * keyword)


def rescore(
    order: list[str],
    *,
    vector_scores: dict[str, float],
    keyword_scores: dict[str, float],
    sentence_scores: dict[str, float],
    weights: tuple[float, float, float],
    candidates: int,
    by_rank: bool = False,
) -> list[str]:
    """The fused order with its first `candidates` reordered by weights (chunk, sentence, keyword): by
    the weighted sum of the three scores, or `by_rank` by their weighted reciprocal ranks within the head
    (a term weighted 0 counts for nothing either way). A chunk without sentence vectors (indexed before
    they were turned on) counts its chunk cosine as its best sentence's, so it is neither favoured nor
    punished for lacking them."""
    head, tail = order[:candidates], order[candidates:]
    columns = []
    for cid in head:
        cosine = max(vector_scores.get(cid, 0.0), 0.0)
        columns.append((cosine, max(sentence_scores.get(cid, cosine), 0.0), keyword_scores.get(cid, 0.0)))
    if by_rank:
        scored = dict.fromkeys(head, 0.0)
        for term, weight in enumerate(weights):
            if weight <= 0:
                continue
            # ties keep the fused order, as in the sort below
            negated = [-column[term] for column in columns]
            ranked = sorted(range(len(head)), key=negated.__getitem__)
            for rank, i in enumerate(ranked, start=1):
                scored[head[i]] += weight / (RRF_K + rank)
    else:
        # the same sum, term by term in the same order, as the rescoring was tuned with
        scored = {
            cid: sum(w * s for w, s in zip(weights, row, strict=True))
            for cid, row in zip(head, columns, strict=True)
        }
    return sorted(head, key=lambda cid: -scored[cid]) + tail  # stable: ties keep the fused order


def default_weights() -> tuple[float, float, float]:
    """The deployment's weights where it makes sentence vectors; none (off) where it does not, so a
    search does not read rows for sentences that are not there."""
    if not settings.SENTENCE_VECTORS:
        return (0.0, 0.0, 0.0)
    return tuple(settings.SEARCH_SENTENCE_WEIGHTS)


def rescored(
    order: list[str],
    *,
    weights: tuple[float, float, float],
    fusion: str,
    vector_weight: float,
    keyword_weight: float,
    candidates: int,
    workspace_id: int,
    vector: Callable[[], np.ndarray],
    model_name: str,
    vector_scores: dict[str, float],
    keyword_scores: dict[str, float],
    held: ResidentVectors | None = None,
) -> list[str]:
    """A hybrid search's fused order, its first `candidates` rescored with sentence vectors at `weights`
    put to the search's own `fusion` and retriever weights (search_weights); unchanged where none of them
    has sentence vectors, and with no weights (no read then: a search costs what it did)."""
    weights = search_weights(weights, vector_weight=vector_weight, keyword_weight=keyword_weight)
    if candidates < 1 or not any(weights):
        return order
    best = best_sentence_scores(
        workspace_id=workspace_id,
        chunk_ids=order[:candidates],
        vector=vector(),
        model_name=model_name,
        held=held,
    )
    if not best:
        return order
    return rescore(
        order,
        vector_scores=vector_scores,
        keyword_scores=keyword_scores,
        sentence_scores=best,
        weights=weights,
        candidates=candidates,
        by_rank=fusion == "rrf",
    )
