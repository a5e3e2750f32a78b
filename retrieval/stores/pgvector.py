"""Vectors in PostgreSQL with pgvector: the embedding column of the chunk table, HNSW with cosine."""

from __future__ import annotations

import numpy as np
from django.db import connection, transaction
from pgvector.django import CosineDistance

from retrieval.stores.base import VectorHit, VectorRecord, VectorStore
from sources.models import Chunk
from sources.tenancy import workspace_scope


class PgVectorStore(VectorStore):
    def __init__(self, ef_search: int = 100, **_options: object) -> None:
        self.ef_search = int(ef_search)

    def upsert(self, *, workspace_id: int, records: list[VectorRecord], model_name: str) -> None:
        with workspace_scope(workspace_id), transaction.atomic():
            by_id = {r.chunk_id: r for r in records}
            chunks = list(Chunk.objects.filter(id__in=list(by_id)))
            for chunk in chunks:
                chunk.embedding = np.asarray(by_id[str(chunk.id)].vector, dtype=np.float32)
                chunk.embedding_model = model_name
            Chunk.objects.bulk_update(chunks, ["embedding", "embedding_model"], batch_size=500)

    def search(
        self,
        *,
        workspace_id: int,
        vector: np.ndarray,
        top_k: int,
        min_score: float | None = None,
        model_name: str,
    ) -> list[VectorHit]:
        with workspace_scope(workspace_id), transaction.atomic():
            with connection.cursor() as cursor:
                # Filtered HNSW scans stop after ef_search candidates; iterative scans keep going until
                # enough rows of this workspace are found (pgvector >= 0.8).
                cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(self.ef_search, top_k)])
                cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            distance = CosineDistance("embedding", np.asarray(vector, dtype=np.float32))
            rows = Chunk.objects.filter(embedding__isnull=False, embedding_model=model_name).annotate(
                distance=distance
            )
            if min_score is not None:
                rows = rows.filter(distance__lte=1.0 - min_score)
            rows = rows.order_by("distance").values_list("id", "distance")[:top_k]
            return [VectorHit(chunk_id=str(chunk_id), score=1.0 - float(d)) for chunk_id, d in rows]

    def delete(self, *, workspace_id: int, chunk_ids: list[str]) -> None:
        # The vectors live in the chunk rows: deleting the rows deletes the vectors.
        with workspace_scope(workspace_id):
            Chunk.objects.filter(id__in=chunk_ids).update(embedding=None)
