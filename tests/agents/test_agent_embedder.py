"""An agent may embed with its model provider's OpenAI-compatible /embeddings instead of the deployment's
embedder: its passages and its questions go to the same provider (a real HTTP server on 127.0.0.1), are
stored and searched under that provider's model name, a change indexes its sources again, and a provider
whose vectors do not fit the index is refused with the reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.doctor import check_embeddings
from agents.embedding import provider_model_name
from agents.models import Agent
from config.backends import embedders
from ingestion.indexing import source_index
from retrieval.services import SearchParams, search_passages
from retrieval.vectors import embedding_input, stale_embeddings
from sources.models import Chunk, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.fakes.openai_server import FakeProvider, openai_compatible_server

pytestmark = pytest.mark.django_db

KETTLE = "Every kettle carries a two-year warranty against manufacturing defects."


@pytest.fixture
def provider():
    # Like text-embedding-3-small: 1536 dimensions, shortened to what a request asks for.
    with openai_compatible_server(FakeProvider(dimensions=1536, honours_dimensions=True)) as running:
        yield running


def embedding_requests(provider) -> list[dict]:
    return [r["body"] for r in provider.requests if r["path"] == "/v1/embeddings"]


def use_provider(api, agent, provider, **extra):
    body = {
        "llm_base_url": provider.base_url,
        "llm_model": "fake-chat",
        "llm_api_key": provider.api_key,
        "embedding_provider": "model",
        "embedding_model": "text-embedding-3-small",
        **extra,
    }
    return api.patch(f"/api/v1/agents/{agent.id}", body, format="json")


def reindexed(source) -> Source:
    with workspace_scope(source.workspace_id):
        source = Source.objects.get(id=source.id)
        source_index(source=source)
        return Source.objects.get(id=source.id)


def test_choosing_the_provider_reindexes_and_embeds_passages_and_questions_there(
    api, workspace, agent, provider, settings
):
    settings.SENTENCE_VECTORS = False  # the provider's requests below are the chunks' alone
    source = index_text(workspace, agent, "Kettle care", KETTLE)
    assert embedding_requests(provider) == []
    response = use_provider(api, agent, provider)
    assert response.status_code == 200, response.content
    assert response.json()["embedding_provider"] == "model"
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=source.id).status == "pending"  # marked for reindex

    assert reindexed(source).status == "done"
    (request,) = embedding_requests(provider)
    assert request["model"] == "text-embedding-3-small" and request["dimensions"] == 384
    assert request["input"] == [embedding_input(KETTLE, "Kettle care")]
    model_name = provider_model_name(provider.base_url, "text-embedding-3-small")
    with workspace_scope(workspace.id):
        assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {model_name}

    # The question is embedded by the same provider, and its vector meets the passage's: the fake's vectors
    # are a hash of the text, so only the same provider gives the same vector for the same text.
    question = embedding_input(KETTLE, "Kettle care")
    with workspace_scope(workspace.id):
        (found,) = search_passages(
            workspace_id=workspace.id,
            query=question,
            params=SearchParams(mode="vector", semantic_cache=False),
            agent_id=agent.id,
        )
    assert found.vector_score == pytest.approx(1.0, abs=1e-4)
    assert embedding_requests(provider)[-1]["input"] == [question]
    assert stale_embeddings(workspace_id=workspace.id) == 0
    with workspace_scope(workspace.id):
        assert check_embeddings(Agent.objects.get(id=agent.id)) == []


def test_another_agent_of_the_workspace_keeps_the_deployments_embedder(api, workspace, agent, provider):
    with workspace_scope(workspace.id):
        other = Agent.objects.create(name="Sales bot")
    theirs = index_text(workspace, other, "Prices", "The steel kettle costs forty euros.")
    use_provider(api, agent, provider)
    index_text(workspace, agent, "Kettle care", KETTLE)
    with workspace_scope(workspace.id):
        assert Chunk.objects.get(source_id=theirs.id).embedding_model == embedders["default"].model_name
        found = search_passages(
            workspace_id=workspace.id,
            query="How much is the steel kettle?",
            params=SearchParams(mode="vector", semantic_cache=False),
            agent_id=other.id,
        )
    assert found and found[0].source_id == theirs.id and found[0].vector_score > 0.5
    assert all(r["input"] != ["How much is the steel kettle?"] for r in embedding_requests(provider))
    assert stale_embeddings(workspace_id=workspace.id) == 0


def test_switching_back_reindexes_with_the_deployments_embedder(api, workspace, agent, provider):
    use_provider(api, agent, provider)
    source = index_text(workspace, agent, "Kettle care", KETTLE)
    with workspace_scope(workspace.id):
        assert Chunk.objects.get(source_id=source.id).embedding_model.startswith("provider:")
    response = api.patch(f"/api/v1/agents/{agent.id}", {"embedding_provider": "deployment"}, format="json")
    assert response.status_code == 200
    assert reindexed(source).status == "done"
    with workspace_scope(workspace.id):
        assert Chunk.objects.get(source_id=source.id).embedding_model == embedders["default"].model_name


def test_chunks_of_the_old_model_are_reported_until_reindexed(api, workspace, agent, provider):
    source = index_text(workspace, agent, "Kettle care", KETTLE)
    use_provider(api, agent, provider)  # marked for reindex, not yet run
    assert stale_embeddings(workspace_id=workspace.id) == 1
    with workspace_scope(workspace.id):
        (finding,) = check_embeddings(Agent.objects.get(id=agent.id))
    assert finding.check == "embeddings" and "1 passage" in finding.problem
    reindexed(source)
    assert stale_embeddings(workspace_id=workspace.id) == 0


def test_a_provider_whose_vectors_do_not_fit_the_index_is_refused_with_the_reason(api, workspace, agent):
    with openai_compatible_server(FakeProvider(dimensions=1536)) as fixed_size:
        use_provider(api, agent, fixed_size, embedding_model="text-embedding-ada-002")
        source = index_text(workspace, agent, "Kettle care", KETTLE)
    assert source.status == "failed"
    assert "1536 dimensions" in source.error and "384" in source.error
    with workspace_scope(workspace.id):
        assert not Chunk.objects.filter(source_id=source.id).exists()


def test_a_wrong_key_is_reported_for_the_agent(api, workspace, agent, provider):
    use_provider(api, agent, provider, llm_api_key="sk-wrong")
    source = index_text(workspace, agent, "Kettle care", KETTLE)
    assert source.status == "failed" and "rejected the agent's model API key" in source.error


def test_the_provider_needs_a_base_url_and_a_model(api, agent):
    response = api.patch(
        f"/api/v1/agents/{agent.id}",
        {"embedding_provider": "model", "embedding_model": ""},
        format="json",
    )
    assert response.status_code == 400
    body = str(response.json())
    assert "embedding_provider" in body and "embedding_model" in body


def test_an_unchanged_provider_does_not_reindex(api, workspace, agent, provider):
    use_provider(api, agent, provider)
    source = index_text(workspace, agent, "Kettle care", KETTLE)
    assert api.patch(f"/api/v1/agents/{agent.id}", {"name": "Renamed"}, format="json").status_code == 200
    with workspace_scope(workspace.id):
        assert Source.objects.get(id=source.id).status == "done"


def test_vectors_are_unit_length(provider):
    from agents.embedding import ProviderEmbedder

    embedder = ProviderEmbedder(base_url=provider.base_url, model="m", api_key=provider.api_key)
    vectors = embedder.embed_documents(["a", "b"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_search_api_filtered_to_the_agent_embeds_with_its_provider(api, workspace, agent, provider):
    use_provider(api, agent, provider)
    index_text(workspace, agent, "Kettle care", KETTLE)
    question = embedding_input(KETTLE, "Kettle care")
    body = api.get(
        "/api/v1/search",
        {"q": question, "mode": "vector", "filters": json.dumps({"agent_id": agent.id})},
    ).json()
    assert body["results"] and body["results"][0]["score"] == pytest.approx(1.0, abs=1e-4)
    assert embedding_requests(provider)[-1]["input"] == [question]
    assert "reindex_needed" not in body


def test_the_doctor_says_when_the_agents_provider_fails(api, workspace, agent, provider):
    from agents.doctor import diagnose

    def embedder_findings() -> list[dict]:
        with workspace_scope(workspace.id):
            report = diagnose(agent=Agent.objects.get(id=agent.id), deployment=False)
        return [f for f in report["findings"] if f["check"] == "embedder"]

    use_provider(api, agent, provider, llm_api_key="sk-wrong")
    (finding,) = embedder_findings()
    assert "rejected the agent's model API key" in finding["problem"] and finding["severity"] == "error"
    use_provider(api, agent, provider)
    assert embedder_findings() == []
