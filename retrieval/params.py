"""What a search is asked to do: its parameters, checked when they are made, and the workspace's own
BM25 settings put in before anything is cached under them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.conf import settings

from retrieval import keyword, sentences
from retrieval.fusion import FUSIONS
from retrieval.stores.base import Filters, validate_filters
from sources.models import Workspace

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


def one_agent(filters: Filters | None) -> int | None:
    """The agent a search is filtered to, when it is exactly one."""
    agents = validate_filters(filters).get("agent_id") or []
    if len(agents) == 1 and isinstance(agents[0], int) and not isinstance(agents[0], bool):
        return agents[0]
    return None
