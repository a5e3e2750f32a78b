"""The reranker interface: one finite relevance score per candidate, higher is better."""

from __future__ import annotations

from abc import ABC, abstractmethod


class RerankError(RuntimeError):
    pass


class Reranker(ABC):
    @abstractmethod
    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """Scores in the order of `documents`. Callers validate them and keep the retrieval order
        when they are not one finite number per document."""
