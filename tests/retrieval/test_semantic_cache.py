"""The per-agent semantic cache: reuse for near-identical queries, invalidation, expiry, isolation."""

import numpy as np
import pytest
from django.test import override_settings

from ingestion.text.chunking import chunk_id
from retrieval import cache as semantic_cache
from retrieval.services import SearchParams, search_passages
from retrieval.stores.base import VectorHit
from retrieval.vectors import store_chunk_vectors
from sources.models import Chunk, Document
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db

QUERY = "How long is the kettle warranty?"
PARAPHRASE = "How long is the kettle's warranty?"


@pytest.fixture
def knowledge(workspace, agent):
    return index_text(workspace, agent, "Warranty", "Every kettle carries a two-year warranty.")


def sneak_in_chunk(workspace, source, text):
    """Index a chunk without going through the ingestion services, which would clear the cache."""
    with workspace_scope(workspace.id):
        document = Document.objects.create(source=source, title="Sneaky", text=text)
        chunk = Chunk.objects.create(
            id=chunk_id(document.id, 0, text),
            document=document,
            source=source,
            position=0,
            text=text,
            metadata={"agent_id": source.agent_id, "workspace_id": workspace.id},
        )
        store_chunk_vectors(workspace_id=workspace.id, chunks=[chunk])


def texts(passages):
    return [p.text for p in passages]


def test_a_near_identical_query_reuses_the_cached_hits(workspace, agent, knowledge):
    first = search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)
    sneak_in_chunk(workspace, knowledge, "The kettle warranty lasts two years, and how long is up to you.")
    again = search_passages(workspace_id=workspace.id, query=PARAPHRASE, agent_id=agent.id)
    assert texts(again) == texts(first)  # served from the cache: the new chunk is not there
    uncached = search_passages(workspace_id=workspace.id, query=PARAPHRASE)  # no agent, no cache
    assert len(uncached) == len(first) + 1


def test_a_different_query_is_not_served_from_the_cache(workspace, agent, knowledge):
    search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)
    sneak_in_chunk(workspace, knowledge, "Store opening hours are nine to five.")
    other = search_passages(workspace_id=workspace.id, query="store opening hours", agent_id=agent.id)
    assert "Store opening hours are nine to five." in texts(other)


def test_ingesting_a_source_of_the_agent_clears_its_cache(workspace, agent, knowledge):
    first = search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)
    index_text(workspace, agent, "Warranty extension", "The kettle warranty can be extended to five years.")
    again = search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)
    assert len(again) == len(first) + 1


def test_deleting_a_source_clears_the_cache(workspace, agent, knowledge):
    from ingestion.lifecycle import source_delete

    extra = index_text(workspace, agent, "Extension", "The kettle warranty can be extended.")
    assert len(search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)) == 2
    source_delete(source=extra)
    assert len(search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)) == 1


def test_entries_expire(workspace, agent, knowledge):
    with override_settings(SEMANTIC_CACHE_TTL=0):
        search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)
        sneak_in_chunk(workspace, knowledge, "The kettle warranty is long.")
        assert len(search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id)) == 2


def test_at_most_the_configured_number_of_entries_are_kept(workspace, agent):
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    with override_settings(SEMANTIC_CACHE_MAX_ENTRIES=100):
        for i in range(130):
            semantic_cache.store(
                workspace_id=workspace.id,
                agent_id=agent.id,
                vector=vector,
                params_key=str(i),
                hits=[(VectorHit("c", 1.0), 1.0, 0.0)],
            )
    from django.core.cache import cache

    entries = cache.get(f"semcache:v1:{workspace.id}:{agent.id}")
    assert len(entries) == 100 and entries[0]["params"] == "30"


def test_the_cache_cannot_be_reached_from_another_workspace(workspace, other_workspace, agent):
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    semantic_cache.store(
        workspace_id=workspace.id,
        agent_id=agent.id,
        vector=vector,
        params_key="p",
        hits=[(VectorHit("secret-chunk", 1.0), 1.0, 0.0)],
    )
    assert semantic_cache.lookup(workspace_id=workspace.id, agent_id=agent.id, vector=vector, params_key="p")
    # Same agent id, other workspace: a different key, and entries carry their workspace too.
    assert (
        semantic_cache.lookup(
            workspace_id=other_workspace.id, agent_id=agent.id, vector=vector, params_key="p"
        )
        is None
    )


def test_different_search_settings_do_not_share_entries(workspace, agent, knowledge):
    search_passages(workspace_id=workspace.id, query=QUERY, agent_id=agent.id, params=SearchParams(top_k=1))
    sneak_in_chunk(workspace, knowledge, "The kettle warranty is long.")
    wider = search_passages(
        workspace_id=workspace.id, query=QUERY, agent_id=agent.id, params=SearchParams(top_k=5)
    )
    assert len(wider) == 2
