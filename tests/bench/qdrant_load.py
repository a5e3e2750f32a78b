"""Loading the synthetic corpus into QdrantStore (local mode) for the scale benchmark, beside the plain
client upserting the same points (the baseline)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from retrieval.keyword import term_counts
from retrieval.stores.base import VectorRecord
from tests.bench.corpus import DIMENSIONS, SyntheticCorpus


def point_id(index: int) -> str:
    """The chunk id of the index-th synthetic chunk (Qdrant needs no chunk rows)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench/{index}"))


def raw_point(record: VectorRecord, workspace_id: int, model_name: str) -> Any:
    """The point QdrantStore writes for a record, built with the plain client's models."""
    from qdrant_client import models

    from retrieval import keyword
    from retrieval.stores.qdrant import DENSE, KEYWORDS, sparse_vector

    length = sum(record.terms.values())
    weights = {term: keyword.term_weight(tf, length, 256.0) for term, tf in record.terms.items()}
    payload = {
        "workspace_id": str(workspace_id),
        "model_name": model_name,
        "meta": record.metadata,
        "terms": list(record.terms),
        "tfs": list(record.terms.values()),
        "length": length,
    }
    vectors = {DENSE: record.vector.tolist(), KEYWORDS: sparse_vector(weights)}
    return models.PointStruct(id=record.chunk_id, vector=vectors, payload=payload)


def load(
    corpus: SyntheticCorpus, store: Any, *, workspace_id: int, agent_id: int, model_name: str
) -> tuple[float, float]:
    """Every chunk through `store.upsert` (BLOCK records a call), and the same points with the plain
    client into a collection of the same shape, 256 a request like the store; seconds for each."""
    from qdrant_client import QdrantClient, models

    from retrieval.stores.qdrant import DENSE, KEYWORDS, UPSERT_BATCH

    raw = QdrantClient(location=":memory:")
    raw.create_collection(
        "bench_raw",
        vectors_config={DENSE: models.VectorParams(size=DIMENSIONS, distance=models.Distance.COSINE)},
        sparse_vectors_config={KEYWORDS: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store_seconds = raw_seconds = 0.0
    try:
        for b in range(corpus.blocks):
            block = corpus.block(b)
            records = [
                VectorRecord(
                    chunk_id=point_id(i),
                    vector=vector,
                    metadata={"agent_id": agent_id},
                    terms=term_counts(text),
                )
                for i, vector, text in zip(
                    range(block.start, block.start + len(block.texts)),
                    block.vectors,
                    block.texts,
                    strict=True,
                )
            ]
            points = [raw_point(r, workspace_id, model_name) for r in records]
            started = time.perf_counter()
            store.upsert(workspace_id=workspace_id, records=records, model_name=model_name)
            store_seconds += time.perf_counter() - started
            started = time.perf_counter()
            for start in range(0, len(points), UPSERT_BATCH):
                raw.upsert("bench_raw", points=points[start : start + UPSERT_BATCH], wait=True)
            raw_seconds += time.perf_counter() - started
    finally:
        raw.close()
    return store_seconds, raw_seconds
