"""An agent's own embedding provider: the model provider's OpenAI-compatible `/embeddings`, called with the
agent's model base URL and its sealed key, instead of the deployment's embedder.

Retrieval and ingestion sit below agents, so they reach this through settings.AGENT_EMBEDDER_RESOLVER
(retrieval/providers.py), the way the API's rate limits reach their resolver: the agent's chunks and its
questions are embedded by the same provider, and its vectors are stored and searched under that provider's
model name, so they are never compared with another model's.

The vector column has one dimension for the whole deployment (sources.models.EMBEDDING_DIMENSIONS), so the
provider is asked for vectors of that size (`dimensions`, which OpenAI's text-embedding-3 models and many
gateways honour); a provider that answers with another size is refused with a message that says so, and
nothing is stored.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from agents.models import Agent
from config.outbound import OutboundBlocked, OutboundClient, OutboundError, OutboundPolicy
from retrieval.embedders.base import Embedder, EmbeddingError, normalize
from sources.models import EMBEDDING_DIMENSIONS, Source
from sources.tenancy import workspace_scope


class ProviderEmbedder(Embedder):
    """`base_url` is set by a workspace admin: every call goes through the outbound client (checked and
    pinned addresses, time and size limits)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        dimensions: int = EMBEDDING_DIMENSIONS,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dimensions = dimensions
        # Recorded with every vector: the provider's address and model, so that another provider (or
        # another model of it) reads as another vector space, never mixed with this one.
        self.model_name = provider_model_name(base_url, model)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._policy = policy

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        body: dict[str, Any] = {"model": self.model, "input": texts, "dimensions": self.dimensions}
        try:
            with OutboundClient(self._policy) as client:
                status, raw = client.request(
                    "POST", f"{self.base_url}/embeddings", json=body, headers=self._headers
                )
        except OutboundBlocked as exc:
            raise EmbeddingError(f"The model base URL was refused. {exc.message}", exc.detail) from exc
        except OutboundError as exc:
            raise EmbeddingError(
                f"We couldn't reach the embedding provider. {exc.message}", exc.detail
            ) from exc
        text = raw[:2000].decode(errors="replace")
        if status in (401, 403):
            raise EmbeddingError("The embedding provider rejected the agent's model API key.", text)
        if status >= 400:
            raise EmbeddingError(f"The embedding provider answered with an error (HTTP {status}).", text)
        try:
            rows = sorted(json.loads(raw)["data"], key=lambda row: row["index"])
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError("The embedding provider sent an unreadable answer.", text) from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingError(
                "The embedding provider sent an unreadable answer.", f"shape {vectors.shape}"
            )
        if vectors.shape[1] != self.dimensions:
            raise EmbeddingError(
                f"The embedding model {self.model} returns vectors of {vectors.shape[1]} dimensions and did "
                f"not shorten them to the {self.dimensions} this deployment's index holds; choose a model "
                "that accepts `dimensions` (text-embedding-3-small does), or use the deployment's embedder.",
                f"expected {(len(texts), self.dimensions)}, got {vectors.shape}",
            )
        return normalize(vectors)


def provider_model_name(base_url: str, model: str) -> str:
    from urllib.parse import urlsplit

    host = urlsplit(base_url).netloc or base_url
    return f"provider:{host}/{model}"[:200]


def embedding_of(agent: Agent) -> tuple[str, ...]:
    """What decides the agent's vector space: a change of any of it means its passages are embedded again.
    The key is not part of it (a new key for the same model gives the same vectors)."""
    if agent.embedding_provider != Agent.EmbeddingProvider.MODEL:
        return (Agent.EmbeddingProvider.DEPLOYMENT,)
    return (agent.embedding_provider, agent.llm_base_url.rstrip("/"), agent.embedding_model)


def uses_own_embedder(agent: Agent) -> bool:
    return bool(
        agent.embedding_provider == Agent.EmbeddingProvider.MODEL
        and agent.llm_base_url
        and agent.embedding_model
    )


def embedder_for_agent(agent_id: int) -> Embedder | None:
    """settings.AGENT_EMBEDDER_RESOLVER: the agent's own embedder, or None for the deployment's."""
    agent = Agent.unscoped.filter(id=agent_id).first()
    if agent is None or not uses_own_embedder(agent):
        return None
    return ProviderEmbedder(
        base_url=agent.llm_base_url, model=agent.embedding_model, api_key=agent.llm_api_key
    )


def agent_embedding_models(workspace_id: int) -> dict[int, str]:
    """settings.AGENT_EMBEDDING_MODELS_RESOLVER: the model name each agent of the workspace with its own
    embedder stores its vectors under (the reindex notice counts against it, not the deployment's)."""
    with workspace_scope(workspace_id):
        agents = Agent.objects.filter(embedding_provider=Agent.EmbeddingProvider.MODEL)
        return {
            agent.id: provider_model_name(agent.llm_base_url, agent.embedding_model)
            for agent in agents
            if uses_own_embedder(agent)
        }


def embedding_changed(*, agent: Agent) -> int:
    """The agent's embeddings now come from elsewhere: every source of it is indexed again (through the
    lifecycle; a source being processed is marked so its next run embeds with the new provider, see below),
    and its semantic cache, whose question vectors are in the old space, is emptied. Returns how many sources
    were queued."""
    from ingestion.lifecycle import source_reindex
    from retrieval import cache as semantic_cache

    queued = 0
    with workspace_scope(agent.workspace_id):
        for source in Source.objects.filter(agent_id=agent.id):
            # A busy source is indexing now and reads the agent's embedder per batch: documents indexed
            # before the change keep the old model, which the reindex notice then counts as stale.
            queued += bool(source_reindex(source=source))
    semantic_cache.invalidate(workspace_id=agent.workspace_id, agent_id=agent.id)
    return queued
