"""Combining the vector and keyword rankings into one.

Four methods: reciprocal rank fusion (ranks only, robust to score scales), normalised score fusion, a
weighted sum of each list's scores put on one scale, which keeps how much better the first hit is than
the tenth, and absolute score fusion. The normalised scale is min-max ("score": the list's best is 1, its
last 0) or the z-score ("zscore": standard deviations above the list's mean, so one outlier at the top
does not squash the rest); a hit missing from a list counts as that list's last. "absolute" adds the
scores as they are, which is right only when each list's scores already mean the same from one query to
the next: a cosine, and BM25 divided by the query's own maximum (retrieval.keyword.max_score), both in
[0, 1]. A weak best hit then stays weak instead of being stretched to 1, as min-max does to a query whose
keywords barely match anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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


def zscore_fusion(rankings: Sequence[Sequence[VectorHit]], weights: Sequence[float]) -> dict[str, float]:
    ids = {hit.chunk_id for ranking in rankings for hit in ranking}
    fused = dict.fromkeys(ids, 0.0)
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        scores = [h.score for h in ranking]
        mean = sum(scores) / len(scores)
        deviation = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
        if deviation <= 1e-12:  # one distinct score: no order to keep, as in score_fusion
            normalised = {h.chunk_id: 1.0 for h in ranking}
            floor = 0.0
        else:
            normalised = {h.chunk_id: (h.score - mean) / deviation for h in ranking}
            floor = (min(scores) - mean) / deviation
        for chunk_id in ids:
            fused[chunk_id] += weight * normalised.get(chunk_id, floor)
    return fused


def absolute_fusion(rankings: Sequence[Sequence[VectorHit]], weights: Sequence[float]) -> dict[str, float]:
    """The weighted sum of each hit's own scores, negative ones (a cosine below 0) counted as 0. A hit
    missing from a list counts 0 there, so the lists should score every candidate: search_hits passes
    each candidate's score by both retrievers."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for hit in ranking:
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight * max(hit.score, 0.0)
    return fused


Fusion = Callable[[Sequence[Sequence[VectorHit]], Sequence[float]], dict[str, float]]

FUSIONS: dict[str, Fusion] = {
    "rrf": reciprocal_rank_fusion,
    "score": score_fusion,
    "zscore": zscore_fusion,
    "absolute": absolute_fusion,
}
