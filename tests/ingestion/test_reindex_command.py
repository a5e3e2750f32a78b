"""`manage.py reindex`: re-embed stale sources, queued or in-process with the HNSW index rebuilt once."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from config.backends import embedders
from retrieval.services import SearchParams, search_passages
from retrieval.vectors import stale_embeddings
from sources.models import Chunk, Source, Status
from sources.tenancy import workspace_scope
from tests.factories import check_deferred_constraints, index_text

pytestmark = pytest.mark.django_db


def embed_with_an_old_model(workspace, source) -> None:
    """What the chunks look like after the deployment switched embedding models."""
    with workspace_scope(workspace.id):
        Chunk.objects.filter(source_id=source.id).update(embedding_model="old-model")


def models_of(workspace, source) -> set[str]:
    with workspace_scope(workspace.id):
        return set(Chunk.objects.filter(source_id=source.id).values_list("embedding_model", flat=True))


def chunks_of(workspace, source) -> set[tuple]:
    with workspace_scope(workspace.id):
        return set(Chunk.objects.filter(source_id=source.id).values_list("id", "embedding_model"))


def hnsw_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw'")
        return cursor.fetchone() is not None


def test_stale_sources_are_reembedded_in_process_with_the_index_rebuilt(workspace, agent, other_workspace):
    from agents.models import Agent

    stale = index_text(workspace, agent, "Tides", "The tide rises twice a day because of the moon.")
    fresh = index_text(workspace, agent, "Bread", "Sourdough bread needs a starter and a long rise.")
    with workspace_scope(other_workspace.id):
        other_agent = Agent.objects.create(name="Theirs")
    theirs = index_text(other_workspace, other_agent, "Tides too", "Another workspace's tides.")
    embed_with_an_old_model(workspace, stale)
    embed_with_an_old_model(other_workspace, theirs)
    fresh_before = chunks_of(workspace, fresh)
    assert stale_embeddings(workspace_id=workspace.id) > 0
    # An old model's vectors are invisible to vector search until reindexed.
    before = search_passages(workspace_id=workspace.id, query="moon tide", params=SearchParams(mode="vector"))
    assert stale.id not in {p.source_id for p in before}

    check_deferred_constraints()
    out = io.StringIO()
    call_command(
        "reindex", "--workspace", str(workspace.id), "--stale-only", "--rebuild-vector-index", stdout=out
    )

    assert "Reindexed 1 sources" in out.getvalue() and "Vector index rebuilt" in out.getvalue()
    assert hnsw_exists()
    current = embedders["default"].model_name
    assert models_of(workspace, stale) == {current}
    assert stale_embeddings(workspace_id=workspace.id) == 0
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=stale.id).status == Status.DONE
        # The up-to-date source was left alone, rows and all.
        assert (
            set(Chunk.objects.filter(source_id=fresh.id).values_list("id", "embedding_model")) == fresh_before
        )
    hits = search_passages(workspace_id=workspace.id, query="moon tide", params=SearchParams(mode="vector"))
    assert hits and hits[0].source_id == stale.id
    # Another workspace was not named, so it was not touched.
    assert models_of(other_workspace, theirs) == {"old-model"}


def test_without_a_rebuild_the_sources_are_queued(workspace, agent):
    source = index_text(workspace, agent, "Tides", "The tide rises twice a day because of the moon.")
    out = io.StringIO()
    call_command("reindex", "--workspace", str(workspace.id), stdout=out)
    assert "Queued 1 sources" in out.getvalue()
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=source.id).status == Status.PENDING
    assert hnsw_exists()


def test_an_unknown_workspace_is_refused_before_anything_is_touched(workspace, agent):
    source = index_text(workspace, agent, "Tides", "The tide rises.")
    with pytest.raises(CommandError, match="No workspace with id 987654"):
        call_command("reindex", "--workspace", str(workspace.id), "--workspace", "987654")
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=source.id).status == Status.DONE


def test_a_rebuild_needs_the_pgvector_store(workspace, settings):
    settings.VECTOR_STORES = {
        "default": {
            "BACKEND": "retrieval.stores.qdrant.QdrantStore",
            "OPTIONS": {"location": ":memory:", "collection": "reindex_command"},
        }
    }
    with pytest.raises(CommandError, match="pgvector store only"):
        call_command("reindex", "--all", "--rebuild-vector-index")
