"""Chunk vectors: what is embedded for a chunk, embedding in length-sorted batches, storing and deleting a
document's vectors (with the model that made them), and the count of chunks another model embedded. Every
write makes the workspace's cached search answers stale."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from django.conf import settings
from django.db.models import Q

from config import metrics
from config.backends import embedders, vector_stores
from retrieval import cache as semantic_cache
from retrieval import keyword, providers
from retrieval.embedders.base import Embedder
from retrieval.stores.base import VectorRecord
from sources.models import Chunk
from sources.tenancy import workspace_scope


def embedding_input(text: str, title: str) -> str:
    """What is embedded for a chunk: the title gives a passage its context (a chunk about 'pricing'
    means little without the product's name) without changing the stored text."""
    if settings.EMBED_TITLE_PREFIX and title and not text.startswith(title):
        return f"{title}\n\n{text}"
    return text


def embed_texts(texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
    """Embed passages in calls of EMBED_BATCH_SIZE. Texts are grouped by length across the whole list (it
    may span many documents), so each call holds passages of similar length and pads little; the vectors
    come back in the order of `texts`. `embedder`: an agent's own (retrieval.providers), else the
    deployment's."""
    embedder = embedder or embedders["default"]
    batch = max(1, settings.EMBED_BATCH_SIZE)
    vectors = np.zeros((len(texts), embedder.dimensions), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        ids = order[start : start + batch]
        with metrics.timed(metrics.EMBED_SECONDS, purpose="documents"):
            vectors[ids] = embedder.embed_documents([texts[i] for i in ids])
    return vectors


def embed_parts(parts: list[list[str]], embedder: Embedder) -> Parts:
    """Each part's vectors in turn, as soon as they are made: parts of at most EMBED_BATCH_SIZE passages
    each (a provider's request), ordered by length by the caller (ingestion.indexing). The embedder is
    called now, so one that runs batches in the background (the built-in model's streams) starts on them
    while the caller does other work; `close()` the result if it is not read to the end."""
    return Parts(embedder.embed_parts(parts), len(parts))


class Parts(Iterator[np.ndarray]):
    """An embedder's parts, one metrics observation each, as embed_texts makes one a call."""

    def __init__(self, made: Iterator[np.ndarray], count: int) -> None:
        self._made = made
        self._left = count

    def __next__(self) -> np.ndarray:
        if not self._left:
            raise StopIteration
        self._left -= 1
        try:
            with metrics.timed(metrics.EMBED_SECONDS, purpose="documents"):
                return next(self._made)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Nothing more is embedded for these parts (a caller that stopped early leaves nothing queued)."""
        self._left = 0
        close = getattr(self._made, "close", None)
        if close is not None:
            close()


def store_chunk_vectors(
    *,
    workspace_id: int,
    chunks: list[Chunk],
    title: str = "",
    inputs: list[str] | None = None,
    vectors: np.ndarray | None = None,
    embedder: Embedder | None = None,
) -> None:
    """Store one document's chunks in the vector store. `inputs` and `vectors` are given when the caller
    embedded several documents in one pass (ingestion.indexing batches them); otherwise they are made here.
    `embedder`: the one that made (or makes) the vectors, whose model name is recorded with them."""
    embedder = embedder or embedders["default"]
    if inputs is None:
        inputs = [embedding_input(c.text, title) for c in chunks]
    if vectors is None:
        vectors = embed_texts(inputs, embedder)
    records = [
        VectorRecord(
            chunk_id=str(c.id), vector=vectors[i], metadata=c.metadata, terms=keyword.term_counts(inputs[i])
        )
        for i, c in enumerate(chunks)
    ]
    vector_stores["default"].upsert(
        workspace_id=workspace_id, records=records, model_name=embedder.model_name
    )
    _record_embedding_model(workspace_id=workspace_id, chunks=chunks, model_name=embedder.model_name)
    semantic_cache.searches_changed(workspace_id)
    metrics.CHUNKS_EMBEDDED.inc(len(records))


def _record_embedding_model(*, workspace_id: int, chunks: list[Chunk], model_name: str) -> None:
    """The chunk row records which model embedded it, whatever the store: the reindex notice and
    `reindex --stale-only` read it there (a Qdrant point's payload cannot be counted per workspace and
    joined to sources cheaply). The pgvector store already wrote it beside the vector, since its searches
    match on it; the exclude then finds nothing to write."""
    with workspace_scope(workspace_id):
        Chunk.objects.filter(id__in=[c.id for c in chunks]).exclude(embedding_model=model_name).update(
            embedding_model=model_name
        )


def embedded_by_another_model(workspace_id: int | None = None) -> Q:
    """Chunks whose vector came from another model than the configured one. Written as "< current or
    > current": two range scans of the (workspace, embedding_model) index rather than a scan of the
    workspace. Chunks not embedded yet have no model and are not counted. With a workspace, agents that
    embed with their own provider are measured against its model (retrieval.providers)."""
    if workspace_id is not None:
        return providers.embedded_by_another_model(workspace_id)
    current = embedders["default"].model_name
    return (Q(embedding_model__lt=current) | Q(embedding_model__gt=current)) & ~Q(embedding_model="")


def stale_embeddings(*, workspace_id: int) -> int:
    """How many chunks another model embedded. Searches never mix vector spaces (they match the model
    name), so these chunks are invisible to vector search until reindexed. Every search asks this, so
    the count only runs when one exists."""
    with workspace_scope(workspace_id):
        others = Chunk.objects.filter(embedded_by_another_model(workspace_id))
        return others.count() if others.exists() else 0


def stored_chunk_vectors(
    *, workspace_id: int, chunk_ids: list[str], embedder: Embedder
) -> dict[str, np.ndarray]:
    """The vectors the store holds for those of the workspace's chunks that `embedder`'s model made."""
    return vector_stores["default"].vectors(
        workspace_id=workspace_id, chunk_ids=chunk_ids, model_name=embedder.model_name
    )


def delete_chunk_vectors(*, workspace_id: int, chunk_ids: list[str]) -> None:
    if chunk_ids:
        vector_stores["default"].delete(workspace_id=workspace_id, chunk_ids=chunk_ids)
        semantic_cache.searches_changed(workspace_id)
