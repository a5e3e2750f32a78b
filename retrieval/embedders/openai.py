"""An OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure-style gateways, vLLM, Ollama, TEI...)."""

from __future__ import annotations

import httpx
import numpy as np

from retrieval.embedders.base import Embedder, EmbeddingError, normalize


class OpenAIEmbedder(Embedder):
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        dimensions: int = 384,
        timeout: float = 30.0,
        **_options: object,
    ) -> None:
        if not base_url or not model:
            raise TypeError("OpenAIEmbedder needs base_url and model")
        self.base_url = base_url.rstrip("/")
        self.model_name = model
        self.dimensions = dimensions
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        try:
            response = self._client.post(
                f"{self.base_url}/embeddings", json={"model": self.model_name, "input": texts}
            )
        except httpx.HTTPError as exc:
            raise EmbeddingError("We couldn't reach the embedding provider.", repr(exc)) from exc
        if response.status_code in (401, 403):
            raise EmbeddingError(
                "The embedding provider rejected the API key; check EMBEDDER_API_KEY.",
                f"HTTP {response.status_code}: {response.text[:500]}",
            )
        if response.status_code >= 400:
            raise EmbeddingError(
                f"The embedding provider answered with an error (HTTP {response.status_code}).",
                response.text[:2000],
            )
        try:
            rows = sorted(response.json()["data"], key=lambda row: row["index"])
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(
                "The embedding provider sent an unreadable answer.", response.text[:2000]
            ) from exc
        if vectors.shape != (len(texts), self.dimensions):
            raise EmbeddingError(
                "The embedding provider returned vectors of the wrong size.",
                f"expected {(len(texts), self.dimensions)}, got {vectors.shape}",
            )
        return normalize(vectors)
