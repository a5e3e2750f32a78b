"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1."""

import numpy as np
import pytest
from django.test import override_settings

from retrieval.embedders.base import EmbeddingError
from retrieval.embedders.openai import OpenAIEmbedder
from tests.fakes.openai_server import FakeProvider, fake_vector, openai_compatible_server


@pytest.fixture
def provider():
    with openai_compatible_server(FakeProvider()) as running:
        yield running


def test_vectors_come_back_in_input_order(provider):
    embedder = OpenAIEmbedder(
        base_url=provider.base_url, model="text-embedding-3-small", api_key=provider.api_key
    )
    vectors = embedder.embed_documents(["alpha", "beta", "gamma"])
    assert np.allclose(vectors[1], fake_vector("beta", 384), atol=1e-6)
    assert provider.requests[0]["body"] == {
        "model": "text-embedding-3-small",
        "input": ["alpha", "beta", "gamma"],
    }


def test_a_wrong_api_key_gives_a_clear_error(provider):
    embedder = OpenAIEmbedder(base_url=provider.base_url, model="m", api_key="sk-wrong")
    with pytest.raises(EmbeddingError) as raised:
        embedder.embed_documents(["x"])
    assert "rejected the API key" in raised.value.message
    assert "Incorrect API key" in raised.value.detail


def test_an_unreachable_provider_gives_a_clear_error():
    embedder = OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", model="m", timeout=2)
    with pytest.raises(EmbeddingError, match="couldn't reach"):
        embedder.embed_documents(["x"])


def test_wrong_dimensions_are_refused(provider):
    embedder = OpenAIEmbedder(base_url=provider.base_url, model="m", api_key=provider.api_key, dimensions=768)
    with pytest.raises(EmbeddingError, match="wrong size"):
        embedder.embed_documents(["x"])


def openai_settings(provider, api_key):
    return {
        "default": {
            "BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
            "OPTIONS": {"base_url": provider.base_url, "model": "fake-embed", "api_key": api_key},
        }
    }


@pytest.mark.django_db
def test_indexing_embeds_in_batches_through_the_configured_provider(provider, workspace, agent, settings):
    settings.SENTENCE_VECTORS = False  # the batches below are the chunks' alone
    from ingestion.indexing import source_index
    from ingestion.lifecycle import source_create
    from sources.models import Chunk, Source
    from sources.tenancy import workspace_scope

    text = "\n\n".join(f"Paragraph {i} talks about topic number {i} in some detail." for i in range(250))
    with (
        override_settings(
            EMBEDDERS=openai_settings(provider, provider.api_key),
            EMBED_BATCH_SIZE=100,
            CHUNK_TARGET_CHARS=100,
        ),
        workspace_scope(workspace.id),
    ):
        source = source_create(
            workspace=workspace, agent_id=agent.id, kind="text", title="T", payload={"content": text}
        )
        assert source_index(source=source) == []  # indexed here, nothing left for other jobs
        source = Source.objects.get(id=source.id)
        assert source.status == "done" and source.chunks_count == 250
        calls = [r for r in provider.requests if r["path"] == "/v1/embeddings"]
        assert [len(c["body"]["input"]) for c in calls] == [100, 100, 50]
        assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {"fake-embed"}


@pytest.mark.django_db
def test_a_wrong_provider_key_fails_the_source_with_a_readable_error(provider, workspace, agent):
    from ingestion.indexing import source_index
    from ingestion.lifecycle import source_create
    from sources.models import Chunk, Source
    from sources.tenancy import workspace_scope

    with override_settings(EMBEDDERS=openai_settings(provider, "sk-wrong")), workspace_scope(workspace.id):
        source = source_create(
            workspace=workspace, agent_id=agent.id, kind="text", title="T", payload={"content": "Some text."}
        )
        source_index(source=source)
        source = Source.objects.get(id=source.id)
        assert source.status == "failed"
        assert "rejected the API key" in source.error
        assert "Incorrect API key" in source.error_detail
        assert Chunk.objects.count() == 0  # nothing half-written
        assert source.documents.get().text == "Some text."  # the content is kept for a retry
