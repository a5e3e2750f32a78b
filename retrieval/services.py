"""Embedding, storing and searching passages, always within one workspace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.conf import settings

from config.backends import embedders, vector_stores
from retrieval.stores.base import VectorRecord
from sources.models import Chunk
from sources.tenancy import workspace_scope


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    text: str
    score: float
    source_id: int
    source_title: str
    url: str
    document_id: int


def embed_texts(texts: list[str]) -> np.ndarray:
    """Embed passages in batches of EMBED_BATCH_SIZE, one provider call per batch."""
    embedder = embedders["default"]
    batch = max(1, settings.EMBED_BATCH_SIZE)
    parts = [embedder.embed_documents(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dimensions), dtype=np.float32)


def store_chunk_vectors(*, workspace_id: int, chunks: list[Chunk]) -> None:
    embedder = embedders["default"]
    vectors = embed_texts([c.text for c in chunks])
    records = [
        VectorRecord(chunk_id=str(c.id), vector=vectors[i], metadata=c.metadata) for i, c in enumerate(chunks)
    ]
    vector_stores["default"].upsert(
        workspace_id=workspace_id, records=records, model_name=embedder.model_name
    )


def delete_chunk_vectors(*, workspace_id: int, chunk_ids: list[str]) -> None:
    if chunk_ids:
        vector_stores["default"].delete(workspace_id=workspace_id, chunk_ids=chunk_ids)


def search_passages(
    *, workspace_id: int, query: str, top_k: int, min_score: float | None = None
) -> list[Passage]:
    embedder = embedders["default"]
    vector = embedder.embed_query(query)
    hits = vector_stores["default"].search(
        workspace_id=workspace_id,
        vector=vector,
        top_k=top_k,
        min_score=min_score,
        model_name=embedder.model_name,
    )
    with workspace_scope(workspace_id):
        chunks = {
            str(c.id): c
            for c in Chunk.objects.filter(id__in=[h.chunk_id for h in hits]).select_related(
                "source", "document"
            )
        }
    passages = []
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:  # deleted between the vector search and now
            continue
        passages.append(
            Passage(
                chunk_id=hit.chunk_id,
                text=chunk.text,
                score=max(0.0, min(1.0, hit.score)),
                source_id=chunk.source_id,
                source_title=chunk.source.title,
                url=chunk.document.url,
                document_id=chunk.document_id,
            )
        )
    return passages
