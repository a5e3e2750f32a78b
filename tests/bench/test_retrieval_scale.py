"""Retrieval at scale: one workspace of GROUNDED_BENCH_CHUNKS synthetic chunks (default 2,000, so the
default test run stays fast; `make bench` sets 100,000 and 1,000,000).

Every figure is printed beside a baseline measured in the same run, as one JSON line per store:
- upsert through the store (vectors + BM25 postings) vs a raw binary COPY of the same rows, in bulk
  (HNSW dropped, then rebuilt) and one document at a time into the full index (see pgvector_load);
- vector search through the HNSW index vs the same store query with index scans disabled (exact), and
  the HNSW recall@10 against that exact answer, also at other hnsw.ef_search values;
- hybrid search (`retrieval.ranking.search_hits`, given the query vector so no embedding is timed),
  with and without the agent filter the widget always sends; keyword-only search; and the embedding
  of the query text, timed on its own;
- the same searches for a small agent (0.2 % of the chunks), whose filter HNSW alone serves badly,
  with recall against the exact filtered search;
- the same for QdrantStore in local mode, on a capped corpus (see qdrant_load).
The test asserts that the results are right (recall, hits), never how fast they came.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

from tests.bench import qdrant_load
from tests.bench.corpus import DIMENSIONS, Query, SyntheticCorpus
from tests.bench.pgvector_load import PgWorkspace, load

# django_db makes pytest-django create the test database: fixtures that only unblock the database do
# not, and would write to the development database instead.
pytestmark = [pytest.mark.bench, pytest.mark.django_db]

CHUNKS = int(os.environ.get("GROUNDED_BENCH_CHUNKS", "2000"))
#: Few queries in the default (small) run so that `make test` stays quick; 200 at benchmark sizes.
QUERIES = int(os.environ.get("GROUNDED_BENCH_QUERIES", "200" if CHUNKS >= 10_000 else "20"))
#: Exact search reads every vector; fewer queries keep the 1M run within reach (recall is averaged
#: over these).
EXACT_QUERIES = int(os.environ.get("GROUNDED_BENCH_EXACT_QUERIES", str(QUERIES)))
#: Local-mode Qdrant is brute force in Python (a keyword query at 10,000 chunks takes over a second), so
#: it gets a capped corpus and few queries; the JSON line says which.
QDRANT_MAX_CHUNKS = int(
    os.environ.get("GROUNDED_BENCH_QDRANT_MAX_CHUNKS", "10000" if CHUNKS >= 10_000 else "1000")
)
QDRANT_QUERIES = int(os.environ.get("GROUNDED_BENCH_QDRANT_QUERIES", "20" if CHUNKS >= 10_000 else "3"))
#: Each kind of query stops after this many seconds (once it has MIN_SAMPLES), so a slow path at 1M
#: chunks (exact search, a filter the planner gets wrong) cannot hold the run for an hour.
BUDGET_SECONDS = float(os.environ.get("GROUNDED_BENCH_BUDGET_SECONDS", "120"))
MIN_SAMPLES = 20
#: Exact search is the recall reference, so it gets more time (~90 queries at 1M chunks on two cores).
EXACT_BUDGET_SECONDS = float(os.environ.get("GROUNDED_BENCH_EXACT_BUDGET_SECONDS", "300"))
#: HNSW recall and latency at these hnsw.ef_search values (the store's default follows the table's size,
#: see pgvector.EF_SEARCH_STEPS), over the queries that have an exact answer: what to set at some size.
EF_SEARCH_SWEEP = (40, 100, 200, 400)
TOP_K = 10
SMALL_AGENT_QUERIES = min(QUERIES, 50)
WARMUP = 10
RECALL_FLOOR = 0.9


def percentiles(samples: list[float]) -> dict[str, float]:
    p50, p95 = np.percentile(np.array(samples) * 1000, [50, 95])
    return {"p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2)}


def timed(
    function: Callable[[Query], Any],
    queries: list[Query],
    warmup: int = WARMUP,
    budget: float = BUDGET_SECONDS,
) -> tuple[list[Any], dict[str, float]]:
    """Run a few queries unmeasured, then the queries measured, until they are done or the time budget
    is spent (after at least MIN_SAMPLES); the results and latency percentiles over `n` queries."""
    for query in queries[:warmup]:
        function(query)
    results, seconds = [], []
    for query in queries:
        started = time.perf_counter()
        results.append(function(query))
        seconds.append(time.perf_counter() - started)
        if len(seconds) >= MIN_SAMPLES and sum(seconds) > budget:
            break
    return results, {**percentiles(seconds), "n": len(seconds)}


def found_share(targets: list[str], results: list[list[str]]) -> float:
    """The share of queries whose source chunk is among their results (over the queries measured)."""
    return sum(target in hits for target, hits in zip(targets, results, strict=False)) / len(results)


def recall(found: list[list[str]], exact: list[list[str]]) -> float:
    """Mean recall@10 of `found` against the exact answers (over the queries that have one)."""
    pairs = zip(found, exact, strict=False)
    return round(float(np.mean([len(set(f) & set(e)) / max(len(e), 1) for f, e in pairs])), 4)


def ratio(slow: float, fast: float) -> float:
    return round(slow / fast, 2) if fast else float("inf")


def require_test_database() -> None:
    """The benchmark drops and rebuilds the HNSW index: never on a database that is not a test one."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if name != connection.settings_dict.get("TEST", {}).get("NAME") and not name.startswith("test_"):
        pytest.fail(f"refusing to run the scale benchmark on database {name!r}, which is not a test database")


def contention() -> dict[str, Any]:
    """What else was using the CPU: figures taken beside a running evaluation are not comparable."""
    others = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ours = cmdline.parent.name in (str(os.getpid()), str(os.getppid()))  # this run, or its wrapper
        if "evaluate_retrieval" in command or ("pytest" in command and not ours):
            others.append(command[:160])
    return {"load_average_1m": round(os.getloadavg()[0], 2), "other_processes": others}


# --- measuring ------------------------------------------------------------------------------------------


@contextmanager
def exact_search() -> Iterator[None]:
    """Index scans off for the enclosed store queries (the store's own transaction becomes a savepoint
    inside this one, so the setting applies to it): the planner scans and sorts every vector."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        yield


def plan_of(
    store: Any,
    workspace_id: int,
    query: Query,
    model_name: str,
    *,
    exact: bool = False,
    top_k: int = TOP_K,
    **search: Any,
) -> str:
    """The plan of the store's vector query, to show which path was measured."""
    from django.db import connection

    plan: list[str] = []

    def explain(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict) -> Any:
        if sql.startswith("SELECT c.id::text"):
            context["cursor"].execute("EXPLAIN " + sql, params)
            plan.extend(row[0].strip() for row in context["cursor"].fetchall())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explain), exact_search() if exact else nullcontext():
        store.search(
            workspace_id=workspace_id, vector=query.vector, top_k=top_k, model_name=model_name, **search
        )
    # Plan nodes only: no costs, and no 384-number vector literal.
    nodes = [re.sub(r"'\[[^']*\]'", "'[...]'", re.sub(r"  \(cost=[^)]*\)", "", line)) for line in plan]
    return " / ".join(node.removeprefix("->  ") for node in nodes)


def vector_ids(store: Any, workspace_id: int, query: Query, model_name: str, **search: Any) -> list[str]:
    """The store's top 10 for a query's vector, as chunk ids."""
    hits = store.search(
        workspace_id=workspace_id, vector=query.vector, top_k=TOP_K, model_name=model_name, **search
    )
    return [h.chunk_id for h in hits]


def statement_times(search: Callable[[Query], Any], queries: list[Query]) -> dict[str, float]:
    """Where a search's time goes: mean milliseconds per SQL statement kind over the queries."""
    from django.db import connection

    totals: dict[str, float] = {}

    def clock(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            kind = re.sub(r"\s+", " ", sql)[:60] + (" [given ids]" if "%(ids)s" in sql else "")
            totals[kind] = totals.get(kind, 0.0) + time.perf_counter() - started

    with connection.execute_wrapper(clock):
        for query in queries:
            search(query)
    return {kind: round(seconds * 1000 / len(queries), 2) for kind, seconds in totals.items()}


def measure_queries(
    store: Any, workspace_id: int, agent_id: int, queries: list[Query], model_name: str
) -> tuple[dict[str, Any], list[list[str]], list[list[str]], list[list[str]]]:
    from config.backends import embedders
    from retrieval import ranking

    def ids(searched: Any, query: Query, **search: Any) -> list[str]:
        return vector_ids(searched, workspace_id, query, model_name, **search)

    def vector(query: Query, **search: Any) -> list[str]:
        return ids(store, query, **search)

    def exact(query: Query) -> list[str]:
        with exact_search():
            return vector(query)

    figures: dict[str, Any] = {}
    # search_hits asks the configured store; point it at the one being measured.
    with mock.patch.object(ranking, "vector_stores", {"default": store}):
        by_hnsw, figures["vector_hnsw"] = timed(vector, queries)
        _by_agent, figures["vector_hnsw_agent_filter"] = timed(
            lambda q: vector(q, filters={"agent_id": agent_id}), queries
        )
        by_keyword, figures["keyword"] = timed(searcher(workspace_id, mode="keyword"), queries)
        by_hybrid, figures["hybrid"] = timed(searcher(workspace_id), queries)
        _by_agent, figures["keyword_agent_filter"] = timed(
            searcher(workspace_id, mode="keyword", filters={"agent_id": agent_id}), queries
        )
        _by_agent, figures["hybrid_agent_filter"] = timed(
            searcher(workspace_id, filters={"agent_id": agent_id}), queries
        )
        figures["hybrid_agent_filter_sql_ms"] = statement_times(
            searcher(workspace_id, filters={"agent_id": agent_id}), queries[:50]
        )
    by_exact, figures["vector_exact"] = timed(exact, queries[:EXACT_QUERIES], budget=EXACT_BUDGET_SECONDS)
    answered = queries[: len(by_exact)]
    figures["ef_search_sweep"] = {}
    for ef_search in EF_SEARCH_SWEEP:
        swept = type(store)(metric=store.metric, ef_search=ef_search)
        by_swept, latency = timed(lambda q, swept=swept: ids(swept, q), answered)
        figures["ef_search_sweep"][ef_search] = {"recall_at_10": recall(by_swept, by_exact), **latency}

    embedder = embedders["default"]
    embedder.embed_query("warm up the model")
    _vectors, figures["embed_query"] = timed(lambda q: embedder.embed_query(q.text), queries[:100])

    figures["hnsw_vs_exact_p50_ratio"] = ratio(
        figures["vector_exact"]["p50_ms"], figures["vector_hnsw"]["p50_ms"]
    )
    figures["recall_at_10"] = recall(by_hnsw, by_exact)
    return figures, by_hnsw, by_keyword, by_hybrid


def measure_small_agent(
    store: Any, space: PgWorkspace, queries: list[Query], model_name: str
) -> dict[str, Any]:
    """The filter few chunks pass: a second agent holding 0.2 % of the workspace, queried with its own
    chunks. The exact baseline is the same filtered query without index scans."""
    from retrieval import ranking

    workspace_id, filters = space.workspace.id, {"agent_id": space.small_agent.id}

    def vector(query: Query) -> list[str]:
        return vector_ids(store, workspace_id, query, model_name, filters=filters)

    def exact(query: Query) -> list[str]:
        with exact_search():
            return vector(query)

    figures: dict[str, Any] = {"chunks": len(space.small_agent_chunks()), "queries": len(queries)}
    with mock.patch.object(ranking, "vector_stores", {"default": store}):
        by_hnsw, figures["vector_hnsw"] = timed(vector, queries)
        by_keyword, figures["keyword"] = timed(
            searcher(workspace_id, mode="keyword", filters=filters), queries
        )
        by_hybrid, figures["hybrid"] = timed(searcher(workspace_id, filters=filters), queries)
        figures["hybrid_sql_ms"] = statement_times(searcher(workspace_id, filters=filters), queries)
    by_exact, figures["vector_exact"] = timed(exact, queries, budget=EXACT_BUDGET_SECONDS / 2)
    targets = [space.ids[q.chunk_index] for q in queries]
    figures["recall_at_10"] = recall(by_hnsw, by_exact)
    figures["vector_results_short_of_10"] = sum(len(hits) < TOP_K for hits in by_hnsw) / len(by_hnsw)
    figures["query_chunk_in_keyword_top10"] = found_share(targets, by_keyword)
    figures["query_chunk_in_hybrid_top10"] = found_share(targets, by_hybrid)
    figures["plan_50"] = plan_of(store, workspace_id, queries[0], model_name, top_k=50, filters=filters)
    return figures


# --- the benchmark --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> SyntheticCorpus:
    return SyntheticCorpus(CHUNKS)


@pytest.fixture(scope="module")
def pgvector_results(corpus, django_db_setup, django_db_blocker) -> dict[str, Any]:
    from config.backends import embedders
    from retrieval.stores.pgvector import PgVectorStore

    model_name = embedders["default"].model_name
    store = PgVectorStore()
    queries = corpus.queries(QUERIES)
    results: dict[str, Any] = {
        "store": "pgvector",
        "chunks": CHUNKS,
        "queries": len(queries),
        "exact_queries": min(EXACT_QUERIES, len(queries)),
    }
    started = time.perf_counter()
    with django_db_blocker.unblock():
        require_test_database()
        before = contention()
        space = PgWorkspace(corpus)
        try:
            results["load"] = load(space, store, model_name)
            # A store made now sees the loaded table's size (the store caches it for minutes).
            store = PgVectorStore()
            results["ef_search"] = store.current_ef_search()
            figures, by_hnsw, by_keyword, by_hybrid = measure_queries(
                store, space.workspace.id, space.agent.id, queries, model_name
            )
            results["latency"] = figures
            small_queries = space.corpus.queries(SMALL_AGENT_QUERIES, among=space.small_agent_chunks())
            results["small_agent"] = measure_small_agent(store, space, small_queries, model_name)
            workspace_id, query = space.workspace.id, queries[0]
            results["plans"] = {
                "hnsw": plan_of(store, workspace_id, query, model_name),
                "hnsw_agent_filter": plan_of(
                    store, workspace_id, query, model_name, filters={"agent_id": space.agent.id}
                ),
                # What hybrid search asks for: 50 candidates, the agent filter.
                "hnsw_agent_filter_50": plan_of(
                    store, workspace_id, query, model_name, top_k=50, filters={"agent_id": space.agent.id}
                ),
                "exact": plan_of(store, workspace_id, query, model_name, exact=True),
            }
            targets = [space.ids[q.chunk_index] for q in queries]
            results["checks"] = {
                "indexed": store.count(workspace_id=space.workspace.id),
                "keyword_results": sum(1 for hits in by_keyword if hits) / len(by_keyword),
                "query_chunk_in_hybrid_top10": found_share(targets, by_hybrid),
                "query_chunk_in_hnsw_top10": found_share(targets, by_hnsw),
            }
        finally:
            space.cleanup()
        results["contention"] = {"before": before, "after": contention()}
    results["wall_s"] = round(time.perf_counter() - started)
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    results["date"] = datetime.now(UTC).strftime("%Y-%m-%d")
    print("\nBENCH retrieval_scale " + json.dumps(results))
    return results


def searcher(workspace_id: int, **params: Any) -> Callable[[Query], list[str]]:
    """Hybrid (or keyword-only) search as the API runs it, minus the query embedding."""
    from retrieval import ranking
    from retrieval.services import SearchParams

    search_params = SearchParams(top_k=TOP_K, **params)

    def search(query: Query) -> list[str]:
        ranked = ranking.search_hits(
            workspace_id=workspace_id, query=query.text, params=search_params, vector=query.vector
        )
        return [hit.chunk_id for hit, _v, _k in ranked[:TOP_K]]

    return search


@pytest.fixture(scope="module")
def qdrant_results(django_db_setup, django_db_blocker) -> dict[str, Any]:
    """QdrantStore in local mode (in memory), on a corpus capped at QDRANT_MAX_CHUNKS. Baseline: the same
    points (dense vector, sparse BM25 weights, payload) upserted with the plain client, 256 a request
    like the store. Local mode has no HNSW: every vector search is exact."""
    from config.backends import embedders
    from retrieval import ranking
    from retrieval.stores.qdrant import QdrantStore

    size = min(CHUNKS, QDRANT_MAX_CHUNKS)
    corpus = SyntheticCorpus(size)
    queries = corpus.queries(QDRANT_QUERIES)
    workspace_id, agent_id, model_name = 1, 1, embedders["default"].model_name
    store = QdrantStore(location=":memory:", collection="bench_scale", dimensions=DIMENSIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "payload indexes have no effect in local mode"
        store_seconds, raw_seconds = qdrant_load.load(
            corpus, store, workspace_id=workspace_id, agent_id=agent_id, model_name=model_name
        )

        def vector(query: Query) -> list[str]:
            hits = store.search(
                workspace_id=workspace_id, vector=query.vector, top_k=TOP_K, model_name=model_name
            )
            return [h.chunk_id for h in hits]

        latency: dict[str, Any] = {}
        # The search reads the database too (sources paused out of search), though no chunk rows exist here.
        with mock.patch.object(ranking, "vector_stores", {"default": store}), django_db_blocker.unblock():
            _by_vector, latency["vector_exact"] = timed(vector, queries, warmup=1)
            by_keyword, latency["keyword"] = timed(searcher(workspace_id, mode="keyword"), queries, warmup=1)
            by_hybrid, latency["hybrid"] = timed(searcher(workspace_id), queries, warmup=1)
            _by_agent, latency["hybrid_agent_filter"] = timed(
                searcher(workspace_id, filters={"agent_id": agent_id}), queries, warmup=1
            )
    targets = [qdrant_load.point_id(q.chunk_index) for q in queries]
    results = {
        "store": "qdrant-local-memory",
        "chunks": size,
        "capped_from": CHUNKS if size < CHUNKS else None,
        "queries": len(queries),
        "load": {
            "store_upsert_chunks_per_s": round(size / store_seconds),
            "raw_client_upsert_chunks_per_s": round(size / raw_seconds),
            "store_vs_raw_client_time_ratio": round(store_seconds / raw_seconds, 2),
        },
        "latency": latency,
        "checks": {
            "indexed": store.count(workspace_id=workspace_id),
            "keyword_results": sum(1 for hits in by_keyword if hits) / len(by_keyword),
            "query_chunk_in_hybrid_top10": found_share(targets, by_hybrid),
        },
        "contention": contention(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    store.close()
    print("\nBENCH retrieval_scale " + json.dumps(results))
    return results


def test_every_chunk_is_indexed(pgvector_results):
    assert pgvector_results["checks"]["indexed"] == CHUNKS


def test_hnsw_recall_at_10_is_above_floor(pgvector_results):
    assert pgvector_results["latency"]["recall_at_10"] >= RECALL_FLOOR


def test_keyword_search_answers_every_query(pgvector_results):
    assert pgvector_results["checks"]["keyword_results"] == 1.0


def test_hybrid_search_finds_the_chunk_each_query_was_made_from(pgvector_results):
    assert pgvector_results["checks"]["query_chunk_in_hybrid_top10"] >= 0.95


def test_an_agent_with_few_chunks_gets_full_and_right_results(pgvector_results):
    small = pgvector_results["small_agent"]
    assert small["vector_results_short_of_10"] == 0
    assert small["recall_at_10"] >= RECALL_FLOOR
    assert small["query_chunk_in_hybrid_top10"] >= 0.95


def test_the_exact_baseline_does_not_use_the_hnsw_index(pgvector_results):
    assert "chunk_embedding_hnsw" not in pgvector_results["plans"]["exact"]
    if CHUNKS >= 10_000:  # below that the planner rightly prefers to scan a small table
        assert "chunk_embedding_hnsw" in pgvector_results["plans"]["hnsw"]


def test_qdrant_local_mode_indexes_every_chunk_and_finds_them(qdrant_results):
    assert qdrant_results["checks"]["indexed"] == qdrant_results["chunks"]
    assert qdrant_results["checks"]["keyword_results"] == 1.0
    assert qdrant_results["checks"]["query_chunk_in_hybrid_top10"] >= 0.95
