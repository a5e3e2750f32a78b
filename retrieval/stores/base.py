"""The store interface: vectors and keyword postings for chunks, always within one workspace.

Every method takes workspace_id as a required keyword, so a store cannot be asked a question that is
not scoped to one workspace. Both searches return chunk ids with a score in [0, 1] (cosine similarity
for vectors, normalised BM25 for keywords), apply `min_score` before the `top_k` cut, and apply
metadata filters with the semantics of `matches_filters`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrieval import keyword

#: Filter keys reach SQL and payload paths, so they are restricted to plain identifiers.
FILTER_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
FilterValue = str | int | float | bool | list[str | int | float | bool]
Filters = Mapping[str, FilterValue]


class VectorStoreError(RuntimeError):
    """The store is unreachable or refused the operation."""


class InvalidFilter(ValueError):
    """A filter that cannot be applied exactly; refusing is safer than searching unfiltered."""


@dataclass(frozen=True)
class VectorRecord:
    chunk_id: str
    vector: np.ndarray
    metadata: dict[str, Any] = field(default_factory=dict)
    #: term -> frequency in this chunk, from retrieval.keyword.term_counts.
    terms: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    score: float


@dataclass(frozen=True)
class HybridHits:
    """Both retrievers' rankings for one query, and every candidate of either scored by both."""

    by_vector: list[VectorHit]
    by_keyword: list[VectorHit]
    #: chunk id -> cosine, for candidates of either list with a vector of the model (passing the floor)
    vector_scores: dict[str, float]
    #: chunk id -> normalised BM25, for candidates of either list that match a term (passing the floor)
    keyword_scores: dict[str, float]


def validate_filters(filters: Filters | None) -> dict[str, list[Any]]:
    """Normalise filters to key -> list of accepted values, refusing anything ambiguous.

    A scalar is an exact match, a list matches any of its values, and an empty list matches nothing.
    """
    normalised: dict[str, list[Any]] = {}
    for key, value in (filters or {}).items():
        if not isinstance(key, str) or not FILTER_KEY.match(key):
            raise InvalidFilter(f"Filter key {key!r} is not a plain identifier.")
        values = list(value) if isinstance(value, list | tuple) else [value]
        for item in values:
            if not isinstance(item, str | int | float | bool) or item is None:
                raise InvalidFilter(f"Filter {key!r} has a value of unsupported type {type(item).__name__}.")
        normalised[key] = values
    return normalised


def matches_filters(metadata: Mapping[str, Any], filters: Filters | None) -> bool:
    """The reference semantics every store implements: a multi-valued field matches when it shares
    one element with the accepted values; a missing field matches nothing."""
    for key, accepted in validate_filters(filters).items():
        if key not in metadata:
            return False
        present = metadata[key]
        present_values = present if isinstance(present, list) else [present]
        if not any(_same(p, a) for p in present_values for a in accepted):
            return False
    return True


def _same(left: Any, right: Any) -> bool:
    # Python says True == 1; JSON and the stores do not, so booleans only match booleans.
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


class VectorStore(ABC):
    #: whether hybrid_search can use the vectors retrieval/resident.py holds in memory
    searches_resident_vectors = False

    @abstractmethod
    def upsert(self, *, workspace_id: int, records: list[VectorRecord], model_name: str) -> None:
        """Insert or replace the records' vectors, keyword terms and metadata."""

    @abstractmethod
    def search(
        self,
        *,
        workspace_id: int,
        vector: np.ndarray,
        top_k: int,
        model_name: str,
        min_score: float | None = None,
        filters: Filters | None = None,
        chunk_ids: list[str] | None = None,
    ) -> list[VectorHit]:
        """Nearest chunks by cosine similarity, best first. `chunk_ids` restricts the search to those
        chunks (hybrid search uses it to score candidates the other retriever found)."""

    @abstractmethod
    def keyword_search(
        self,
        *,
        workspace_id: int,
        terms: dict[str, int],
        top_k: int,
        min_score: float | None = None,
        filters: Filters | None = None,
        chunk_ids: list[str] | None = None,
        k1: float = keyword.K1,
        b: float = keyword.B,
    ) -> list[VectorHit]:
        """Chunks ranked by BM25 (with the workspace's k1 and b) for the query terms, best first, scores
        normalised to [0, 1] by the best score the query could reach (see retrieval.keyword.max_score)."""

    def hybrid_search(
        self,
        *,
        workspace_id: int,
        vector: Callable[[], np.ndarray],
        terms: dict[str, int],
        top_k: int,
        model_name: str,
        min_score: float | None = None,
        filters: Filters | None = None,
        k1: float = keyword.K1,
        b: float = keyword.B,
        resident: Any = None,
    ) -> HybridHits:
        """Both searches' top_k, then each one's candidates scored by the other retriever (so a hit's
        reported score can be the stronger of the two). `vector` returns the query's embedding, waiting
        for it if need be: the keyword search runs first, while the query is being embedded. A store may
        do this in fewer round trips; the answer must be this one's. `resident`: the workspace's vectors
        in this process's memory (retrieval/resident.py), which a store may search instead of its own."""
        common: dict[str, Any] = {"workspace_id": workspace_id, "min_score": min_score, "filters": filters}
        by_keyword = self.keyword_search(terms=terms, top_k=top_k, k1=k1, b=b, **common)
        query = vector()
        by_vector = self.search(vector=query, top_k=top_k, model_name=model_name, **common)
        vector_scores = {h.chunk_id: h.score for h in by_vector}
        keyword_scores = {h.chunk_id: h.score for h in by_keyword}
        missing = [c for c in keyword_scores if c not in vector_scores]
        if missing:
            rescored = self.search(
                vector=query, top_k=len(missing), model_name=model_name, chunk_ids=missing, **common
            )
            vector_scores.update({h.chunk_id: h.score for h in rescored})
        missing = [c for c in vector_scores if c not in keyword_scores]
        if missing and terms:
            rescored = self.keyword_search(
                terms=terms, top_k=len(missing), chunk_ids=missing, k1=k1, b=b, **common
            )
            keyword_scores.update({h.chunk_id: h.score for h in rescored})
        return HybridHits(by_vector, by_keyword, vector_scores, keyword_scores)

    @abstractmethod
    def delete(self, *, workspace_id: int, chunk_ids: list[str]) -> None:
        """Remove the chunks' vectors and keyword postings; unknown ids are ignored."""

    @abstractmethod
    def vectors(self, *, workspace_id: int, chunk_ids: list[str], model_name: str) -> dict[str, np.ndarray]:
        """The stored vectors of those of `chunk_ids` that are the workspace's and were made by the model,
        by chunk id (a re-index reuses them for text that did not change: ingestion/reuse.py)."""

    @abstractmethod
    def count(self, *, workspace_id: int) -> int:
        """How many chunks of the workspace have a vector."""

    @abstractmethod
    def point_ids(self, *, workspace_id: int) -> set[str]:
        """The ids of every chunk of the workspace the store holds a vector for (for audits: the database
        and the store compared, see ingestion/audit.py)."""
