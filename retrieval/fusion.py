"""Combining the vector and keyword rankings into one.

Two methods: reciprocal rank fusion (ranks only, robust to score scales) and normalised score fusion
(min-max per list, weighted sum), which keeps how much better the first hit is than the tenth.
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval.stores.base import VectorHit

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[VectorHit]], weights: Sequence[float], k: int = RRF_K
) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight / (k + rank)
    return fused


def score_fusion(rankings: Sequence[Sequence[VectorHit]], weights: Sequence[float]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        scores = [h.score for h in ranking]
        low, high = min(scores), max(scores)
        spread = high - low
        for hit in ranking:
            # A list with one distinct score says nothing about order; give its hits full weight.
            normalised = (hit.score - low) / spread if spread > 1e-12 else 1.0
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight * normalised
    return fused


FUSIONS = {"rrf": reciprocal_rank_fusion, "score": score_fusion}
