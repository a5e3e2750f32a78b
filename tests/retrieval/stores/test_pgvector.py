"""PgVectorStore: workspace isolation, the score floor and the embedding model are enforced in SQL."""

import numpy as np
import pytest

from ingestion.chunking import chunk_id
from retrieval.stores.base import VectorRecord
from retrieval.stores.pgvector import PgVectorStore
from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def add_chunks(workspace, agent, vectors, model="m1"):
    store = PgVectorStore()
    with workspace_scope(workspace.id):
        source = Source.objects.create(agent=agent, kind="text", title="s")
        document = Document.objects.create(source=source, text="t")
        chunks = Chunk.objects.bulk_create(
            [
                Chunk(
                    id=chunk_id(document.id, i, f"c{i}"),
                    workspace=workspace,
                    document=document,
                    source=source,
                    position=i,
                    text=f"c{i}",
                )
                for i in range(len(vectors))
            ]
        )
    store.upsert(
        workspace_id=workspace.id,
        records=[VectorRecord(chunk_id=str(c.id), vector=v) for c, v in zip(chunks, vectors, strict=True)],
        model_name=model,
    )
    return [str(c.id) for c in chunks]


def test_search_never_returns_another_workspaces_vectors(workspace, other_workspace, agent, other_agent):
    mine = add_chunks(workspace, agent, [unit(1, 0.5), unit(0, 1)])
    theirs = add_chunks(other_workspace, other_agent, [unit(1, 0)])  # the exact match lives elsewhere
    hits = PgVectorStore().search(workspace_id=workspace.id, vector=unit(1, 0), top_k=10, model_name="m1")
    assert [h.chunk_id for h in hits] == mine
    assert not set(theirs) & {h.chunk_id for h in hits}


def test_min_score_applies_before_the_top_k_cut(workspace, agent):
    ids = add_chunks(workspace, agent, [unit(1, 0), unit(1, 0.2), unit(1, 3), unit(0, 1)])
    hits = PgVectorStore().search(
        workspace_id=workspace.id, vector=unit(1, 0), top_k=3, min_score=0.9, model_name="m1"
    )
    assert [h.chunk_id for h in hits] == ids[:2]
    assert all(h.score >= 0.9 for h in hits)
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_vectors_of_another_embedding_model_are_not_mixed_in(workspace, agent):
    add_chunks(workspace, agent, [unit(1, 0)], model="old-model")
    new = add_chunks(workspace, agent, [unit(0.5, 1)], model="new-model")
    hits = PgVectorStore().search(
        workspace_id=workspace.id, vector=unit(1, 0), top_k=5, model_name="new-model"
    )
    assert [h.chunk_id for h in hits] == new


def test_upsert_cannot_write_into_another_workspaces_chunks(workspace, other_workspace, other_agent):
    theirs = add_chunks(other_workspace, other_agent, [unit(1, 0)])
    PgVectorStore().upsert(
        workspace_id=workspace.id,
        records=[VectorRecord(chunk_id=theirs[0], vector=unit(0, 1))],
        model_name="m1",
    )
    hits = PgVectorStore().search(
        workspace_id=other_workspace.id, vector=unit(1, 0), top_k=1, model_name="m1"
    )
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)  # unchanged
