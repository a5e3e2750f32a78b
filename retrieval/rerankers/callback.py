"""A Python function as a reranker: `RERANKERS = {"mine": {"BACKEND": "...CallbackReranker",
"OPTIONS": {"function": "myapp.ranking.score"}}}` where score(query, documents) -> list[float]."""

from __future__ import annotations

from collections.abc import Callable

from django.utils.module_loading import import_string

from retrieval.rerankers.base import Reranker


class CallbackReranker(Reranker):
    def __init__(self, *, function: str | Callable[[str, list[str]], list[float]]) -> None:
        self.function = import_string(function) if isinstance(function, str) else function

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        return list(self.function(query, documents))
