"""The common `/rerank` API shape (Cohere, Jina, Voyage, TEI, vLLM...):
POST {query, documents, model?} -> {results: [{index, relevance_score}]}."""

from __future__ import annotations

import httpx

from retrieval.rerankers.base import Reranker, RerankError


class HttpReranker(Reranker):
    def __init__(
        self, *, base_url: str = "", api_key: str = "", model: str = "", timeout: float = 15.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        if not self.base_url:
            raise RerankError("No reranker is configured (RERANKER_BASE_URL).")
        body: dict = {"query": query, "documents": documents}
        if self.model:
            body["model"] = self.model
        try:
            response = httpx.post(
                f"{self.base_url}/rerank", json=body, headers=self._headers, timeout=self.timeout
            )
            response.raise_for_status()
            results = response.json()["results"]
            scores = [float("nan")] * len(documents)
            for row in results:
                scores[int(row["index"])] = float(row["relevance_score"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError) as exc:
            raise RerankError(f"The reranker failed: {exc}") from exc
        return scores
