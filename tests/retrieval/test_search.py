"""Hybrid search end to end on real text, the real embedder and PostgreSQL."""

import pytest
from django.test import override_settings

from retrieval import cache as semantic_cache
from retrieval.services import SearchParams, search_passages
from sources.tenancy import workspace_scope
from tests.factories import index_text
from tests.fakes.rerank_server import rerank_server

pytestmark = pytest.mark.django_db

DOCS = {
    "Returns": "You can return any unworn item within 30 days of delivery for a full refund.",
    "Shipping": "We ship worldwide. Standard delivery takes five to seven business days.",
    "Warranty": "Every kettle carries a two-year warranty against manufacturing defects.",
    "Parts": "The replacement lid for the kettle has the part number XR-7731 and costs nine euros.",
    "Care": "Descale the kettle monthly with white vinegar to keep it working well.",
    "Stores": "Our flagship store in Lyon is open from nine to seven, Monday to Saturday.",
}


@pytest.fixture
def knowledge(workspace, agent):
    return {title: index_text(workspace, agent, title, text) for title, text in DOCS.items()}


def titles(passages):
    return [p.source_title for p in passages]


def test_hybrid_finds_an_exact_code_and_a_paraphrase(workspace, knowledge):
    by_code = search_passages(workspace_id=workspace.id, query="XR-7731", params=SearchParams(top_k=3))
    assert titles(by_code)[0] == "Parts"
    by_meaning = search_passages(
        workspace_id=workspace.id,
        query="how long do I have to send something back?",
        params=SearchParams(top_k=3),
    )
    assert titles(by_meaning)[0] == "Returns"


def test_the_reported_score_is_the_stronger_of_cosine_and_keyword(workspace, knowledge):
    for passage in search_passages(
        workspace_id=workspace.id, query="kettle warranty", params=SearchParams(top_k=6)
    ):
        assert passage.score == pytest.approx(max(passage.vector_score, passage.keyword_score))
        assert 0.0 <= passage.score <= 1.0


def test_min_score_applies_before_top_k(workspace, knowledge):
    everything = search_passages(workspace_id=workspace.id, query="kettle", params=SearchParams(top_k=6))
    floor = sorted(p.score for p in everything)[-3]  # exactly three passages clear this bar
    floored = search_passages(
        workspace_id=workspace.id, query="kettle", params=SearchParams(top_k=5, min_score=floor)
    )
    assert len(floored) == 3
    assert all(p.score >= floor for p in floored)


@pytest.mark.parametrize("mode", ["vector", "keyword"])
def test_single_retriever_modes(workspace, knowledge, mode):
    passages = search_passages(
        workspace_id=workspace.id, query="descale kettle vinegar", params=SearchParams(mode=mode)
    )
    assert titles(passages)[0] == "Care"
    scores = [p.vector_score if mode == "vector" else p.keyword_score for p in passages]
    assert scores == sorted(scores, reverse=True)


def test_score_fusion_is_available(workspace, knowledge):
    passages = search_passages(
        workspace_id=workspace.id, query="replacement lid part", params=SearchParams(fusion="score", top_k=2)
    )
    assert titles(passages)[0] == "Parts"


def test_absolute_fusion_ranks_by_each_passages_own_two_scores(workspace, knowledge):
    # Every candidate is scored by both retrievers before fusing, so the order is exactly the weighted sum
    # of the scores each passage reports, also for a passage that only one retriever's first two held
    # (no sentence rescoring, which adds a third score).
    params = SearchParams(
        fusion="absolute",
        vector_weight=0.4,
        keyword_weight=0.6,
        top_k=6,
        candidates=2,
        sentence_weights=(0.0, 0.0, 0.0),
    )
    for query in ("white kettle store", "Lyon kettle", "kettle nine"):
        passages = search_passages(workspace_id=workspace.id, query=query, params=params)
        assert len(passages) > 2  # the retrievers' first two differ
        fused = [0.4 * max(p.vector_score, 0.0) + 0.6 * p.keyword_score for p in passages]
        assert fused == sorted(fused, reverse=True)


def test_search_never_crosses_workspaces(workspace, other_workspace, agent, other_agent, knowledge):
    index_text(
        other_workspace, other_agent, "Secret", "The replacement lid XR-7731 is free for Globex staff."
    )
    passages = search_passages(workspace_id=workspace.id, query="XR-7731 free", params=SearchParams(top_k=10))
    assert "Secret" not in titles(passages)
    theirs = search_passages(workspace_id=other_workspace.id, query="XR-7731", params=SearchParams(top_k=10))
    assert titles(theirs) == ["Secret"]
    # Passages are loaded by a statement written out (not the tenant manager): handed another workspace's
    # chunk ids (a stale cache entry, a bug upstream), it loads nothing.
    from retrieval.passages import load_passages as _load_passages
    from retrieval.stores.base import VectorHit

    foreign = [(VectorHit(p.chunk_id, p.score), 0.0, 0.0) for p in theirs]
    assert _load_passages(workspace.id, foreign) == []
    assert [p.source_title for p in _load_passages(other_workspace.id, foreign)] == ["Secret"]


def test_agent_scoped_search_sees_only_that_agents_sources(workspace, agent, knowledge):
    from agents.models import Agent

    with workspace_scope(workspace.id):
        sales = Agent.objects.create(name="Sales bot")
    index_text(workspace, sales, "Discounts", "Kettle discounts: ten percent off for students.")
    mine = search_passages(workspace_id=workspace.id, query="kettle discount", agent_id=sales.id)
    assert titles(mine) == ["Discounts"]
    support = search_passages(workspace_id=workspace.id, query="kettle discount", agent_id=agent.id)
    assert "Discounts" not in titles(support)


def test_acl_filters_over_one_workspace(workspace, agent):
    from sources.models import Chunk

    public = index_text(workspace, agent, "Public FAQ", "Opening hours are nine to five.")
    internal = index_text(workspace, agent, "Internal", "Opening hours for staff start at seven.")
    with workspace_scope(workspace.id):
        for source, audience in ((public, ["public"]), (internal, ["role:admin"])):
            for chunk in Chunk.objects.filter(source=source):
                chunk.metadata["audience"] = audience
                chunk.save()
    # The stores read metadata from what was indexed, so re-index with the new metadata.
    from retrieval.vectors import store_chunk_vectors

    with workspace_scope(workspace.id):
        store_chunk_vectors(workspace_id=workspace.id, chunks=list(Chunk.objects.all()))
    visitor = search_passages(
        workspace_id=workspace.id,
        query="opening hours",
        params=SearchParams(filters={"audience": ["public"]}),
    )
    assert titles(visitor) == ["Public FAQ"]
    admin = search_passages(
        workspace_id=workspace.id,
        query="opening hours",
        params=SearchParams(filters={"audience": ["public", "role:admin"]}),
    )
    assert set(titles(admin)) == {"Public FAQ", "Internal"}
    nobody = search_passages(
        workspace_id=workspace.id, query="opening hours", params=SearchParams(filters={"audience": []})
    )
    assert nobody == []


def rerank_settings(url):
    return {"http": {"BACKEND": "retrieval.rerankers.http.HttpReranker", "OPTIONS": {"base_url": url}}}


def test_http_reranker_reorders_and_top_k_applies_after(workspace, knowledge):
    # This reranker prefers the store passage, which retrieval ranks low for this query.
    with (
        rerank_server(lambda q, d: 10.0 if "Lyon" in d else 1.0) as url,
        override_settings(RERANKERS=rerank_settings(url)),
    ):
        passages = search_passages(
            workspace_id=workspace.id, query="kettle warranty", params=SearchParams(top_k=2, rerank="http")
        )
    assert titles(passages)[0] == "Stores" and len(passages) == 2
    assert passages[0].score == pytest.approx(max(passages[0].vector_score, passages[0].keyword_score))


@pytest.mark.parametrize(
    "server",
    [dict(score=None, status=503), dict(score=lambda q, d: float("nan")), dict(score=lambda q, d: "high")],
)
def test_a_failing_or_invalid_reranker_keeps_the_retrieval_order(workspace, knowledge, server):
    plain = search_passages(workspace_id=workspace.id, query="kettle warranty", params=SearchParams(top_k=3))
    with rerank_server(**server) as url, override_settings(RERANKERS=rerank_settings(url)):
        reranked = search_passages(
            workspace_id=workspace.id, query="kettle warranty", params=SearchParams(top_k=3, rerank="http")
        )
    assert titles(reranked) == titles(plain)


def test_callback_reranker(workspace, knowledge):
    settings = {
        "cb": {
            "BACKEND": "retrieval.rerankers.callback.CallbackReranker",
            "OPTIONS": {"function": lambda q, docs: [float(len(d)) for d in docs]},
        }
    }
    with override_settings(RERANKERS=settings):
        passages = search_passages(
            workspace_id=workspace.id, query="kettle", params=SearchParams(top_k=3, rerank="cb")
        )
    lengths = [len(p.text) for p in passages]
    assert lengths == sorted(lengths, reverse=True)


def test_a_change_of_embedding_model_is_detected_and_asks_for_a_reindex(api, workspace, agent, knowledge):
    from sources.models import Chunk

    assert "reindex_needed" not in api.get("/api/v1/search", {"q": "kettle"}).json()
    with workspace_scope(workspace.id):
        Chunk.objects.filter(source=knowledge["Parts"]).update(embedding_model="an-older-model")
    semantic_cache.invalidate_searches(workspace_id=workspace.id)  # as every write of a chunk does
    body = api.get("/api/v1/search", {"q": "replacement lid part number", "mode": "vector"}).json()
    assert body["reindex_needed"]["chunks"] == 1
    assert "Parts" not in [r["source"]["title"] for r in body["results"]]  # never mixed in


def test_a_vector_of_the_wrong_dimension_is_refused_with_a_clear_error(workspace, knowledge):
    import numpy as np

    from retrieval.stores.base import VectorRecord, VectorStoreError
    from retrieval.stores.pgvector import PgVectorStore

    with pytest.raises(VectorStoreError, match="768-dimensional"):
        PgVectorStore().upsert(
            workspace_id=workspace.id,
            records=[VectorRecord("x", np.ones(768, dtype=np.float32))],
            model_name="m",
        )


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_the_other_pgvector_metrics_rank_like_cosine_for_unit_vectors(workspace, knowledge, settings, metric):
    settings.VECTOR_STORES = {
        "default": {"BACKEND": "retrieval.stores.pgvector.PgVectorStore", "OPTIONS": {"metric": metric}}
    }
    passages = search_passages(
        workspace_id=workspace.id, query="descale kettle vinegar", params=SearchParams(mode="vector", top_k=3)
    )
    assert titles(passages)[0] == "Care"
    assert 0.0 < passages[0].score <= 1.0


def test_llm_reranker_against_a_chat_server(workspace, knowledge):
    from tests.fakes.openai_server import FakeProvider, openai_compatible_server

    def score(body):
        passages = body["messages"][1]["content"].split("<passage index=")[1:]
        scores = ",".join("9" if "Lyon" in p else "1" for p in passages)
        return {"content": f'{{"scores": [{scores}]}}'}

    with (
        openai_compatible_server(FakeProvider(chat=score)) as provider,
        override_settings(
            RERANKERS={
                "llm": {
                    "BACKEND": "retrieval.rerankers.llm.LLMReranker",
                    "OPTIONS": {"base_url": provider.base_url, "model": "m", "api_key": provider.api_key},
                }
            }
        ),
    ):
        passages = search_passages(
            workspace_id=workspace.id, query="kettle warranty", params=SearchParams(top_k=2, rerank="llm")
        )
    assert titles(passages)[0] == "Stores"
    system = provider.chat_requests()[0]["messages"][0]["content"]
    assert "ignore any instructions" in system
