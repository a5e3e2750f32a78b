"""A small workspace's vectors searched from this process's memory (retrieval/resident.py): the same
results as the store's own search, current after every ingest, one workspace's copy never another's,
and bounded in size. Transactional: a copy is read on its own connection, from committed rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from retrieval import cache as search_cache
from retrieval import resident
from tests.factories import index_text

pytestmark = pytest.mark.django_db(transaction=True)

TEXTS = {
    "Kettle": "Every kettle carries a two-year warranty. Descale it monthly with citric acid.",
    "Toaster": "The toaster has six browning levels and a defrost button for frozen bread.",
    "Blender": "Blender jars are dishwasher safe; the blades lift out for cleaning.",
    "Returns": "Returns are accepted within 30 days of purchase with the receipt.",
}


@pytest.fixture(autouse=True)
def _fresh_copies():
    resident.forget_all()
    yield
    resident.wait_for_builds()
    resident.forget_all()


@pytest.fixture
def shop(workspace, agent):
    return [index_text(workspace, agent, title, text) for title, text in TEXTS.items()]


def ask(client, q: str, **extra):
    response = client.get("/api/v1/search", {"q": q, "top_k": 3, **extra})
    assert response.status_code == 200, response.content
    return [(r["source"]["title"], round(r["score"], 5)) for r in response.json()["results"]]


def generation(workspace) -> str:
    return search_cache.search_lookup(workspace_id=workspace.id, key="-").generation


def held_copy(workspace, model: str) -> resident.ResidentVectors | None:
    resident.held(workspace_id=workspace.id, model_name=model, generation=generation(workspace))
    resident.wait_for_builds()
    return resident.held(workspace_id=workspace.id, model_name=model, generation=generation(workspace))


def statements(client, q: str, marker: str = "hnsw.ef_search", **extra) -> int:
    """How many of the search's statements contain marker (HNSW's settings; a table's name)."""
    with CaptureQueriesContext(connection) as queries:
        ask(client, q, **extra)
    return sum(marker in query["sql"] for query in queries.captured_queries)


def hnsw_statements(client, q: str, **extra) -> int:
    return statements(client, q, **extra)


def test_searches_from_memory_give_the_stores_results(api, workspace, shop, settings):
    from config.backends import embedders

    questions = ["how long is the kettle warranty", "can I wash the blender jar", "frozen bread", "refund"]
    settings.SEARCH_RESIDENT_MAX_CHUNKS = 0  # the store's own search
    modes = ("hybrid", "vector", "keyword")
    from_store = [ask(api, q, min_score=0.0, mode=m) for q in questions for m in modes]
    settings.SEARCH_RESIDENT_MAX_CHUNKS = 20_000
    search_cache.invalidate_searches(workspace_id=workspace.id)  # asked again, not answered from the cache
    copy = held_copy(workspace, embedders["default"].model_name)
    assert copy is not None and len(copy.ids) == 4 and copy.workspace_id == workspace.id
    assert hnsw_statements(api, "descaling with citric acid") == 0  # searched in memory
    assert hnsw_statements(api, "descaling with citric acid", mode="vector") == 0
    # With the postings held too, no search statement at all: BM25 is computed from the copy.
    assert copy.postings is not None and copy.postings.chunk_count == 4
    for mode in modes:
        assert statements(api, f"descale the kettle {mode}", "retrieval_keyword", mode=mode) == 0
        # nor a passages statement: what a passage shows is held with the copy
        assert statements(api, f"descale a kettle {mode}", "sources_document", mode=mode) == 0
    from_memory = [ask(api, q, min_score=0.0, mode=m) for q in questions for m in modes]
    assert from_memory == from_store and from_store[0][0][0] == "Kettle"


def test_the_first_search_of_a_generation_uses_the_store_and_an_ingest_is_found_at_once(
    api, workspace, agent, shop
):
    from config.backends import embedders

    model = embedders["default"].model_name
    assert held_copy(workspace, model) is not None
    assert hnsw_statements(api, "toaster levels") == 0
    index_text(workspace, agent, "Warranty claims", "Warranty claims for a kettle need the serial number.")
    # A new generation: the old copy is never searched again; the store answers until a new one is built.
    assert hnsw_statements(api, "serial number for a warranty claim") == 1
    assert ask(api, "serial number for a warranty claim")[0][0] == "Warranty claims"
    copy = held_copy(workspace, model)
    assert copy is not None and len(copy.ids) == 5
    assert ask(api, "serial number needed for kettle claims")[0][0] == "Warranty claims"


def test_a_copy_is_one_workspaces_and_an_outsider_never_sees_it(
    api, outsider_api, workspace, other_workspace, other_agent, shop
):
    from config.backends import embedders

    model = embedders["default"].model_name
    index_text(other_workspace, other_agent, "Theirs", "Their kettle warranty lasts ten years.")
    ours = held_copy(workspace, model)
    theirs = held_copy(other_workspace, model)
    assert ours is not None and theirs is not None
    assert not set(ours.ids) & set(theirs.ids) and len(theirs.ids) == 1
    assert [title for title, _ in ask(outsider_api, "kettle warranty")] == ["Theirs"]
    assert "Theirs" not in [title for title, _ in ask(api, "kettle warranty")]
    # A copy is only handed to the workspace it was read for, whatever generation a caller names.
    assert (
        resident.held(workspace_id=other_workspace.id, model_name=model, generation=ours.generation) is None
    )


def builds(outcome: str) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value("grounded_search_resident_builds_total", {"outcome": outcome})
    return value or 0.0


def test_a_workspace_too_large_to_hold_is_searched_in_the_store(api, workspace, shop, settings):
    from config.backends import embedders

    settings.SEARCH_RESIDENT_MAX_CHUNKS = 3  # the shop has 4
    before = builds("too_large"), builds("held")
    assert held_copy(workspace, embedders["default"].model_name) is None
    assert hnsw_statements(api, "kettle warranty") == 1
    assert (builds("too_large"), builds("held")) == (before[0] + 1, before[1])  # counted, for operators
    settings.SEARCH_RESIDENT_MAX_CHUNKS = 4
    search_cache.invalidate_searches(workspace_id=workspace.id)
    assert held_copy(workspace, embedders["default"].model_name) is not None
    assert builds("held") == before[1] + 1


def test_copies_stay_within_the_byte_budget_least_recently_used_dropped(
    workspace, other_workspace, agent, other_agent, shop, settings
):
    from config.backends import embedders

    model = embedders["default"].model_name
    index_text(other_workspace, other_agent, "Theirs", "Their kettle warranty lasts ten years.")
    ours = held_copy(workspace, model)
    assert ours is not None
    settings.SEARCH_RESIDENT_MAX_BYTES = ours.nbytes + 10  # room for our copy, not for a second one
    theirs = held_copy(other_workspace, model)
    assert theirs is not None
    assert (
        resident.held(workspace_id=workspace.id, model_name=model, generation=generation(workspace)) is None
    )
    resident.wait_for_builds()  # the lookup above asked for ours again, which now pushes theirs out
    assert held_copy(workspace, model) is not None
    assert (
        resident.held(
            workspace_id=other_workspace.id, model_name=model, generation=generation(other_workspace)
        )
        is None
    )


def test_postings_are_held_only_when_every_keyword_indexed_chunk_is_in_the_copy(workspace, shop):
    from config.backends import embedders
    from sources.models import Chunk
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        stale = Chunk.objects.filter(source__title="Toaster").values_list("id", flat=True)[0]
        Chunk.objects.filter(id=stale).update(embedding_model="an-older-model")
    model = embedders["default"].model_name
    copy = resident.load(workspace_id=workspace.id, model_name=model, generation="g")
    # The toaster's chunk has postings (the store's BM25 finds it) but no row here: BM25 stays in SQL.
    assert copy is not None and len(copy.ids) == 3 and copy.postings is None


def test_a_copy_holds_unit_vectors_of_one_model(workspace, shop):
    copy = resident.load(workspace_id=workspace.id, model_name="another-model", generation="g")
    assert copy is not None and copy.ids == []
    assert copy.top(np.ones(384, dtype=np.float32), 5, None) == []


def test_filtered_searches_from_memory_give_the_stores_results(api, workspace, agent, shop, settings):
    from agents.models import Agent
    from config.backends import embedders
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        second = Agent.objects.create(name="Garden")
    index_text(workspace, second, "Hoses", "Garden hoses carry a five-year warranty and coil away.")
    filters = [
        {"agent_id": agent.id},
        {"agent_id": [second.id]},
        {"agent_id": [agent.id, second.id], "lang": "en"},
        {"agent_id": []},  # matches nothing
        {"agent_id": True},  # a boolean never matches a number
        {"no_such_field": "x"},
    ]
    questions = ["warranty", "how do I clean it"]
    modes = ("hybrid", "vector", "keyword")
    asks = [(q, m, json.dumps(f)) for q in questions for m in modes for f in filters]
    settings.SEARCH_RESIDENT_MAX_CHUNKS = 0
    from_store = [ask(api, q, min_score=0.0, mode=m, filters=f) for q, m, f in asks]
    settings.SEARCH_RESIDENT_MAX_CHUNKS = 20_000
    search_cache.invalidate_searches(workspace_id=workspace.id)
    copy = held_copy(workspace, embedders["default"].model_name)
    assert copy is not None and copy.postings is not None and len(copy.ids) == 5
    for mode in modes:  # no vector or BM25 statement: the whole search in memory
        for marker in ("<=>", "retrieval_keywordposting"):
            agents = json.dumps({"agent_id": second.id})
            assert statements(api, f"warranty length {mode}", marker, mode=mode, filters=agents) == 0
    from_memory = [ask(api, q, min_score=0.0, mode=m, filters=f) for q, m, f in asks]
    assert from_memory == from_store
    by_agent = dict(zip(asks, from_memory, strict=True))
    assert {t for t, _ in by_agent[("warranty", "hybrid", json.dumps(filters[1]))]} == {"Hoses"}
    assert "Hoses" not in {t for t, _ in by_agent[("warranty", "hybrid", json.dumps(filters[0]))]}
    assert by_agent[("warranty", "keyword", json.dumps(filters[3]))] == []


def test_a_filter_mask_has_the_reference_semantics():
    from retrieval.resident_filters import FilterIndex
    from retrieval.stores.base import matches_filters

    metadata = [
        {"agent_id": 1, "lang": "en", "audience": ["staff", "public"]},
        {"agent_id": 2, "lang": "fr", "audience": "public", "pinned": True},
        {"agent_id": 1.0, "audience": [], "pinned": False, "note": None, "nested": {"a": 1}},
        {"agent_id": True, "lang": ["en", "en"], "pinned": 1},
        {},
    ]
    index = FilterIndex.of(metadata)
    filters = [
        {"agent_id": 1},
        {"agent_id": [1, 2]},
        {"agent_id": True},
        {"pinned": True},
        {"pinned": 1},
        {"audience": "public"},
        {"audience": ["staff"], "lang": "en"},
        {"lang": "en"},
        {"lang": []},
        {"note": "x"},
        {"nested": 1},
        {"missing": "x"},
    ]
    for f in filters:
        expected = [matches_filters(m, f) for m in metadata]
        assert index.mask(f).tolist() == expected, f
        assert index.mask(f).tolist() == expected, f  # and from the masks kept
    assert index.mask({}) is None and index.mask(None) is None


def test_an_agents_chat_search_uses_the_copy_masked_to_its_sources(workspace, agent, shop, settings):
    from agents.models import Agent
    from config.backends import embedders
    from retrieval.services import SearchParams, search_passages
    from sources.tenancy import workspace_scope

    with workspace_scope(workspace.id):
        second = Agent.objects.create(name="Garden")
    index_text(workspace, second, "Hoses", "Garden hoses carry a five-year warranty and coil away.")
    # The agent's semantic cache off: every ask below is searched, none answered from an earlier one.
    params = SearchParams(top_k=3, min_score=0.0, semantic_cache=False)

    def chat_search(agent_id: int, q: str):
        with CaptureQueriesContext(connection) as queries:
            passages = search_passages(workspace_id=workspace.id, query=q, params=params, agent_id=agent_id)
        searched = sum(  # vector and BM25 statements (the passages' own statement is neither)
            "<=>" in query["sql"] or "retrieval_keywordposting" in query["sql"]
            for query in queries.captured_queries
        )
        return [(p.source_title, round(p.score, 5)) for p in passages], searched

    settings.SEARCH_RESIDENT_MAX_CHUNKS = 0  # the store's own search
    from_store = [chat_search(a.id, "warranty") for a in (agent, second)]
    assert all(searched for _, searched in from_store)
    settings.SEARCH_RESIDENT_MAX_CHUNKS = 20_000
    copy = held_copy(workspace, embedders["default"].model_name)
    assert copy is not None and len(copy.ids) == 5
    ours, searched = chat_search(agent.id, "warranty period")
    assert searched == 0 and ours and "Hoses" not in {t for t, _ in ours}
    theirs, searched = chat_search(second.id, "warranty period")
    assert searched == 0 and {t for t, _ in theirs} == {"Hoses"}
    from_memory = [chat_search(a.id, "warranty") for a in (agent, second)]
    assert [found for found, _ in from_memory] == [found for found, _ in from_store]


def test_a_renamed_source_is_shown_renamed_at_once_and_from_the_next_copy(api, workspace, shop):
    from config.backends import embedders
    from sources.models import Source
    from sources.tenancy import workspace_scope

    model = embedders["default"].model_name
    assert held_copy(workspace, model) is not None
    assert ask(api, "kettle warranty")[0][0] == "Kettle"
    with workspace_scope(workspace.id):
        kettle = Source.objects.get(title="Kettle")
    response = api.patch(f"/api/v1/sources/{kettle.id}", {"title": "Kettles"}, format="json")
    assert response.status_code == 200, response.content
    assert ask(api, "how long is a kettle warranty")[0][0] == "Kettles"  # a new generation: no old copy
    assert held_copy(workspace, model) is not None
    assert statements(api, "kettle warranty years", "sources_document") == 0  # shown from the new copy
    assert ask(api, "kettle warranty years")[0][0] == "Kettles"
