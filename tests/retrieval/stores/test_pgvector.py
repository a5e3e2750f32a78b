"""What only the pgvector store does: binary vector writes, ef_search by table size, its HNSW index."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.db import connection, transaction

from agents.models import Agent
from retrieval.keyword import term_counts
from retrieval.stores.base import VectorRecord
from retrieval.stores.pgvector import PgVectorStore, ef_search_for, vector_literal
from sources.tenancy import workspace_scope
from tests.factories import check_deferred_constraints
from tests.retrieval.stores.test_contract import MODEL, Corpus

pytestmark = pytest.mark.django_db


def stored_vector(chunk_id: str) -> np.ndarray:
    with connection.cursor() as cursor:
        cursor.execute("SELECT embedding::real[] FROM sources_chunk WHERE id = %s", [chunk_id])
        return np.array(cursor.fetchone()[0], dtype=np.float32)


def random_vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_vectors_are_stored_bit_for_bit(workspace, agent):
    store = PgVectorStore()
    corpus = Corpus(store, workspace, agent)
    vectors = [random_vector(seed) for seed in range(20)]
    ids = [corpus.add(f"passage {i}", vector) for i, vector in enumerate(vectors)]
    for chunk_id, vector in zip(ids, vectors, strict=True):
        assert np.array_equal(stored_vector(chunk_id), vector)


def test_the_text_form_reads_back_as_the_same_float32():
    vector = random_vector(7)
    with connection.cursor() as cursor:
        cursor.execute("SELECT (%s::vector)::real[]", [vector_literal(vector)])
        assert np.array_equal(np.array(cursor.fetchone()[0], dtype=np.float32), vector)


def test_two_upserts_in_one_transaction_write_only_their_own_vectors(workspace, agent):
    store = PgVectorStore()
    corpus = Corpus(store, workspace, agent)
    first, second = random_vector(1), random_vector(2)
    with transaction.atomic():
        a = corpus.add("first passage", first)
        b = corpus.add("second passage", second)
        # Rewriting one chunk in the same transaction must not touch the other.
        store.upsert(
            workspace_id=workspace.id,
            records=[VectorRecord(chunk_id=a, vector=second, metadata={}, terms=term_counts("x"))],
            model_name=MODEL,
        )
    assert np.array_equal(stored_vector(a), second)
    assert np.array_equal(stored_vector(b), second)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM grounded_vector_batch")
        assert cursor.fetchone()[0] == 0


def test_upsert_cannot_write_a_vector_into_another_workspaces_chunk(workspace, agent, other_workspace):
    store = PgVectorStore()
    corpus = Corpus(store, workspace, agent)
    original = random_vector(3)
    chunk_id = corpus.add("mine", original)
    store.upsert(
        workspace_id=other_workspace.id,
        records=[VectorRecord(chunk_id=chunk_id, vector=random_vector(4), metadata={}, terms={"x": 1})],
        model_name=MODEL,
    )
    assert np.array_equal(stored_vector(chunk_id), original)
    assert store.count(workspace_id=other_workspace.id) == 0


def test_ef_search_grows_with_the_table():
    assert ef_search_for(0) == 100
    assert ef_search_for(100_000) == 100
    assert ef_search_for(1_000_000) == 200


def test_search_sets_ef_search_from_the_table_size_unless_it_is_fixed(workspace, agent):
    seen = []

    def record(execute, sql, params, many, context):
        seen.extend(int(value) for value in re.findall(r"SET LOCAL hnsw\.ef_search = (\d+)", sql))
        return execute(sql, params, many, context)

    corpus = Corpus(PgVectorStore(), workspace, agent)
    corpus.add("a passage", random_vector(5))
    with connection.execute_wrapper(record):
        PgVectorStore().search(workspace_id=workspace.id, vector=random_vector(5), top_k=5, model_name=MODEL)
        PgVectorStore(ef_search=321).search(
            workspace_id=workspace.id, vector=random_vector(5), top_k=5, model_name=MODEL
        )
        PgVectorStore(ef_search=10).search(
            workspace_id=workspace.id, vector=random_vector(5), top_k=50, model_name=MODEL
        )
    # A test table is small: the first step; a fixed value wins; never fewer than top_k.
    assert seen == [100, 321, 50]


def index_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'sources_chunk'")
        return {row[0] for row in cursor.fetchall()}


def test_another_metric_gets_its_own_index_and_search_still_ranks_by_it(workspace, agent):
    store = PgVectorStore(metric="l2", maintenance_work_mem="64MB")
    corpus = Corpus(store, workspace, agent)
    near, far = corpus.add("near", random_vector(8)), corpus.add("far", random_vector(9))
    check_deferred_constraints()
    assert store.ensure_index() == "chunk_embedding_hnsw_l2"
    assert "chunk_embedding_hnsw_l2" in index_names()
    hits = store.search(workspace_id=workspace.id, vector=random_vector(8), top_k=2, model_name=MODEL)
    assert [h.chunk_id for h in hits] == [near, far]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    store.drop_index()
    assert "chunk_embedding_hnsw_l2" not in index_names()
    assert "chunk_embedding_hnsw" in index_names()  # the cosine index is another store's


def test_ensure_index_gives_the_build_its_memory(workspace):
    store = PgVectorStore(maintenance_work_mem="300MB")
    seen = []

    def record(execute, sql, params, many, context):
        if sql.startswith("CREATE INDEX"):
            with connection.cursor() as cursor:
                cursor.execute("SHOW maintenance_work_mem")
                seen.append(cursor.fetchone()[0])
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone()[0] != "300MB"
    with connection.execute_wrapper(record):
        store.ensure_index()
    assert seen == ["300MB"]


@pytest.mark.parametrize("cap", [10_000, 0], ids=["by-ids", "by-join"])
def test_a_filter_few_chunks_pass_ranks_them_by_either_path(workspace, agent, monkeypatch, cap):
    from retrieval.stores import pgvector

    monkeypatch.setattr(pgvector, "FILTERED_IDS_CAP", cap)
    store = PgVectorStore()
    corpus = Corpus(store, workspace, agent)
    strong = [corpus.add(f"alpha alpha alpha note {i}", random_vector(i), lang="en") for i in range(210)]
    rare = corpus.add("alpha and a lot of other words that dilute this match", random_vector(900), lang="de")
    corpus.add("nothing about the query here", random_vector(901), lang="de")

    def search(**extra):
        hits = store.keyword_search(
            workspace_id=workspace.id, terms=term_counts("alpha"), top_k=3, filters={"lang": "de"}, **extra
        )
        return [h.chunk_id for h in hits]

    assert search() == [rare]
    # Restricted to given chunks (hybrid search's cross-scoring), the same, within those chunks.
    assert search(chunk_ids=[*strong, rare]) == [rare]
    assert search(chunk_ids=strong) == []


def test_keyword_counts_stay_true_through_new_chunks_rewrites_and_deletes(workspace, agent):
    store = PgVectorStore()
    corpus = Corpus(store, workspace, agent)
    a = corpus.add("one two three", random_vector(1))
    corpus.add("four five", random_vector(2))

    def counts():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT chunk_count, total_length FROM retrieval_keywordstats WHERE workspace_id = %s",
                [workspace.id],
            )
            stats = cursor.fetchone()
            cursor.execute(
                "SELECT count(*) FROM retrieval_keywordposting WHERE workspace_id = %s", [workspace.id]
            )
            return (*stats, cursor.fetchone()[0])

    assert counts() == (2, 5, 5)
    # A chunk written again replaces its postings; its old length leaves the total.
    store.upsert(
        workspace_id=workspace.id,
        records=[VectorRecord(chunk_id=a, vector=random_vector(3), metadata={}, terms=term_counts("six"))],
        model_name=MODEL,
    )
    assert counts() == (2, 3, 3)
    store.delete(workspace_id=workspace.id, chunk_ids=[a])
    assert counts() == (1, 2, 2)


def _around(center: np.ndarray, seed: int) -> np.ndarray:
    vector = center + 0.3 * np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


@pytest.fixture
def small_workspace_behind_a_big_one(workspace, agent, other_workspace):
    """Three chunks of `workspace` far from the query, 400 of another workspace near it, and a planner
    that takes the HNSW index for the small workspace (its statistics say it has 400 chunks, and the
    other ways to its rows are gone for this transaction), whose scan stops after 100 tuples: what a
    small workspace meets in a big shared table, where the scan's limit is 20,000 tuples."""
    query = random_vector(11)
    store = PgVectorStore()
    with workspace_scope(other_workspace.id):
        big_agent = Agent.objects.create(workspace=other_workspace, name="big")
    big = Corpus(store, other_workspace, big_agent)
    for i in range(400):
        big.add(f"kettle descaling step {i}", _around(query, i))
    small = Corpus(store, workspace, agent)
    ids = [small.add(f"kettle warranty note {i}", _around(-query, 1000 + i)) for i in range(400)]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sources_chunk")
        store.delete(workspace_id=workspace.id, chunk_ids=ids[3:])
        cursor.execute("DELETE FROM sources_chunk WHERE id = ANY(%s::uuid[])", [ids[3:]])
        cursor.execute("SET LOCAL hnsw.max_scan_tuples = 100")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'sources_chunk'"
            " AND indexdef LIKE '%%(workspace_id%%'"
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP INDEX {name}")  # rolled back with the test's transaction
    return store, query, ids[:3]


def exact_reruns(run) -> tuple[object, int]:
    seen = []

    def record(execute, sql, params, many, context):
        seen.append(" + 0 LIMIT" in sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        result = run()
    return result, sum(seen)


def test_a_short_hnsw_scan_of_a_small_workspace_is_searched_again_exactly(
    workspace, small_workspace_behind_a_big_one
):
    store, query, ids = small_workspace_behind_a_big_one
    hits, reruns = exact_reruns(
        lambda: store.search(workspace_id=workspace.id, vector=query, top_k=5, model_name=MODEL)
    )
    assert sorted(h.chunk_id for h in hits) == sorted(ids)
    assert reruns == 1  # the index scan alone came back short (2 of 3 when this was written)
    hybrid, reruns = exact_reruns(
        lambda: store.hybrid_search(
            workspace_id=workspace.id,
            vector=lambda: query,
            terms=term_counts("kettle warranty"),
            top_k=5,
            model_name=MODEL,
        )
    )
    assert sorted(h.chunk_id for h in hybrid.by_vector) == sorted(ids)
    assert reruns == 1


def test_a_workspace_too_big_to_scan_keeps_what_the_index_found(
    workspace, small_workspace_behind_a_big_one, monkeypatch
):
    from retrieval.stores import pgvector

    store, query, ids = small_workspace_behind_a_big_one
    monkeypatch.setattr(pgvector, "EXACT_FALLBACK_MAX_ROWS", 2)
    hits, reruns = exact_reruns(
        lambda: store.search(workspace_id=workspace.id, vector=query, top_k=5, model_name=MODEL)
    )
    assert reruns == 0 and len(hits) < len(ids)


def test_a_workspace_of_fewer_chunks_than_asked_for_is_not_searched_twice(workspace, agent):
    store = PgVectorStore()
    corpus = Corpus(store, workspace, agent)
    ids = [corpus.add(f"passage {i}", random_vector(i)) for i in range(3)]
    hits, reruns = exact_reruns(
        lambda: store.search(workspace_id=workspace.id, vector=random_vector(0), top_k=5, model_name=MODEL)
    )
    assert sorted(h.chunk_id for h in hits) == sorted(ids) and reruns == 0
