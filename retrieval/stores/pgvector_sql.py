"""The SQL statements PgVectorStore runs to search: vector top-k, BM25 ranking, and the hybrid statement.

They live apart from the store because they are pure text: functions of the metric and of which
clauses a search needs, with no connection and no rows, so each statement reads in one place and the
store reads as what it does with the answers. Every statement takes named parameters (`%(name)s`);
identifiers never come from callers: the metric picks from a fixed table (METRICS), and filter keys are
validated and passed as parameters (filter_sql).
"""

from __future__ import annotations

import json
from typing import Any

from retrieval.stores.base import Filters, validate_filters

# metric -> (distance operator, HNSW operator class, SQL turning the distance {d} into a similarity)
METRICS: dict[str, tuple[str, str, str]] = {
    "cosine": ("<=>", "vector_cosine_ops", "1 - {d}"),
    "l2": ("<->", "vector_l2_ops", "1 - {d} * {d} / 2"),  # for unit vectors, |a-b|^2 = 2 - 2 cos
    "ip": ("<#>", "vector_ip_ops", "-{d}"),  # pgvector returns the negative inner product
}

#: k1 and b are the workspace's, bound as parameters (float8, so the arithmetic is not integer).
K1, B = "%(k1)s::float8", "%(b)s::float8"
#: The best score the query could reach (keyword.max_score): sum(w) * (k1 + 1), over the query's terms `q`.
MAX_SCORE = f"(SELECT nullif(sum(w) * ({K1} + 1), 0) FROM q)"


def filter_sql(filters: Filters | None, alias: str = "c") -> tuple[str, dict[str, Any]]:
    """SQL for metadata filters on `{alias}.metadata`, with the semantics of base.matches_filters.

    Each accepted value is two containments: `{"key": v}` (the field is v) or `{"key": [v]}` (the field
    is a list holding v). Both are served by the chunk table's GIN index (jsonb_path_ops), so a filter
    that few chunks pass (a small agent, a rare audience) is a bitmap scan of those chunks rather than
    an HNSW walk that must skip nearly everything. Returns a condition to append (starting with AND, or
    empty) and its named parameters.
    """
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for key, values in validate_filters(filters).items():
        if not values:
            clauses.append("FALSE")  # an empty list matches nothing
            continue
        options = []
        for value in values:
            v, a = f"fv{len(params)}", f"fa{len(params)}"
            params[v], params[a] = json.dumps({key: value}), json.dumps({key: [value]})
            options.append(f"{alias}.metadata @> %({v})s::jsonb OR {alias}.metadata @> %({a})s::jsonb")
        clauses.append("(" + " OR ".join(options) + ")")
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


# --- vectors ------------------------------------------------------------------------------------


def _distance(metric: str) -> str:
    """The distance to the query vector: what the HNSW index orders by."""
    operator, _opclass, _similarity = METRICS[metric]
    return f"c.embedding {operator} %(vector)s::vector"


def _order(metric: str, *, exact: bool) -> str:
    """ORDER BY the distance; `exact`: by a value the HNSW index cannot give, so every row is compared."""
    return f" ORDER BY ({_distance(metric)}) + 0" if exact else f" ORDER BY {_distance(metric)}"


def _similarity(metric: str) -> str:
    """The distance turned into the score a search reports (higher is closer)."""
    _operator, _opclass, similarity = METRICS[metric]
    return similarity.format(d=f"({_distance(metric)})")


def _embedded_chunks(metric: str, *, with_floor: bool) -> str:
    """FROM/WHERE for the workspace's chunks embedded by the query's model (and at or above the floor)."""
    floor = f" AND {_similarity(metric)} >= %(floor)s" if with_floor else ""
    return (
        " FROM sources_chunk c WHERE c.workspace_id = %(workspace)s AND c.embedding IS NOT NULL"
        f" AND c.embedding_model = %(model)s{floor}"
    )


def vector_sql(
    metric: str, *, with_floor: bool, where: str = "", given_ids: bool = False, exact: bool = False
) -> str:
    """(chunk id, score) of the top `%(limit)s` chunks by distance, through the HNSW index; or, with
    `given_ids`, of the chunks in `%(ids)s`, unordered. `where` is filter_sql's condition.

    Scoring a few given chunks must not go through the HNSW index: an index scan filtered down to a
    handful of ids walks most of the graph, whatever the few ids. Without ORDER BY on the distance
    the planner reads them by primary key; the caller ranks them instead."""
    if given_ids:
        where += " AND c.id = ANY(%(ids)s::uuid[])"
    order = "" if given_ids else f"{_order(metric, exact=exact)} LIMIT %(limit)s"
    rows = _embedded_chunks(metric, with_floor=with_floor)
    return f"SELECT c.id::text, {_similarity(metric)}{rows}{where}{order}"


# --- BM25 ---------------------------------------------------------------------------------------


def _bm25_sum(avg_length: str) -> str:
    """A chunk's BM25 over the query's terms `q` (term, w = idf * qtf) joined to its postings `p`."""
    return f"sum(q.w * p.tf * ({K1} + 1) / (p.tf + {K1} * (1 - {B} + {B} * p.length / {avg_length})))"


def keyword_params(
    *,
    workspace_id: int,
    terms: dict[str, int],
    min_score: float | None,
    k1: float,
    b: float,
    chunk_ids: list[str] | None,
) -> dict[str, Any]:
    """The parameters every keyword_sql statement takes, but its `%(limit)s`."""
    return {
        "k1": float(k1),
        "b": float(b),
        "terms": list(terms),
        "counts": list(terms.values()),
        "workspace": workspace_id,
        "floor": float(min_score or 0.0),
        "ids": chunk_ids,
    }


def keyword_sql(
    *, chunk_ids: list[str] | None, passing: str = "", join_filter: str = "", weights: bool = False
) -> str:
    """BM25 in one statement: sum over query terms of idf * qtf * tf*(k1+1) / (tf + k1*(1-b+b*len/avg)),
    divided by the best score the query could reach so it lands in [0, 1] (keyword.max_score). idf is
    keyword.idf over the workspace's statistics, computed here rather than in Python: reading the
    statistics and document frequencies first cost two more round trips per search.

    `passing`: a filter condition on `c`; every ranked candidate comes back with whether it passes.
    `join_filter`: the filter joined to every posting instead (for filters that pass many chunks
    beyond pgvector.FILTERED_IDS_CAP). `weights`: the ranking and what hybrid_sql needs to score other
    chunks the same way."""
    join = " JOIN sources_chunk c ON c.id = p.chunk_id" if join_filter else ""
    conditions = join_filter
    if chunk_ids is not None:
        conditions += " AND p.chunk_id = ANY(%(ids)s::uuid[])"
    ranking = (
        "WITH stats AS (SELECT chunk_count::float8 AS n, total_length::float8 / chunk_count AS avg_length"
        "  FROM retrieval_keywordstats WHERE workspace_id = %(workspace)s AND chunk_count > 0),"
        # The query terms' postings, read once (an index-only scan) for both their counts and the scores.
        " postings AS MATERIALIZED (SELECT term, chunk_id, tf, length FROM retrieval_keywordposting"
        "  WHERE workspace_id = %(workspace)s AND term = ANY(%(terms)s::text[])),"
        " df AS (SELECT term, count(*)::float8 AS n FROM postings GROUP BY term),"
        " q AS (SELECT t.term,"
        "  t.qtf * ln(1 + (s.n - coalesce(df.n, 0) + 0.5) / (coalesce(df.n, 0) + 0.5)) AS w"
        "  FROM unnest(%(terms)s::text[], %(counts)s::int[]) AS t(term, qtf) CROSS JOIN stats s"
        "  LEFT JOIN df ON df.term = t.term),"
        f" scored AS (SELECT p.chunk_id, {_bm25_sum('(SELECT avg_length FROM stats)')} / {MAX_SCORE} AS score"
        f"  FROM postings p JOIN q ON q.term = p.term{join}"
        f"  WHERE TRUE{conditions} GROUP BY p.chunk_id),"
        " ranked AS (SELECT chunk_id, score FROM scored WHERE score >= %(floor)s"
        "  ORDER BY score DESC, chunk_id LIMIT %(limit)s)"
    )
    if weights:
        # The ranking (part 0), then what scores other chunks the same way (hybrid_sql): each query
        # term's weight (part 1), the average length (2) and the normaliser (3).
        return ranking + (
            " SELECT 0 AS part, chunk_id::text AS chunk_id, score, NULL::text AS term FROM ranked"
            " UNION ALL SELECT 1, NULL, w, term FROM q"
            " UNION ALL SELECT 2, NULL, avg_length, NULL FROM stats"
            f" UNION ALL SELECT 3, NULL, {MAX_SCORE}, NULL"
            " ORDER BY part, score DESC, chunk_id"
        )
    if not passing:
        return ranking + " SELECT chunk_id::text, score FROM ranked ORDER BY score DESC, chunk_id"
    return (
        ranking + " SELECT r.chunk_id::text, r.score, c.id IS NOT NULL FROM ranked r"
        f" LEFT JOIN sources_chunk c ON c.id = r.chunk_id{passing} ORDER BY r.score DESC, r.chunk_id"
    )


# --- hybrid -------------------------------------------------------------------------------------


def _given_bm25(chunks: str) -> str:
    """The BM25 of the chunks `chunks` selects, from the query's term weights (keyword_sql(weights=True))."""
    return (
        f"SELECT p.chunk_id, {_bm25_sum('%(avg)s::float8')} / %(norm)s::float8 AS score"
        " FROM retrieval_keywordposting p"
        " JOIN unnest(%(wterms)s::text[], %(ws)s::float8[]) AS q(term, w) ON q.term = p.term"
        f" WHERE p.workspace_id = %(workspace)s AND p.chunk_id IN ({chunks})"
        " GROUP BY p.chunk_id"
    )


def given_bm25_sql() -> str:
    """(chunk id, BM25) of the chunks in `%(vec_ids)s`, at or above the floor, with the weights of
    keyword_sql(weights=True): the vector candidates' keyword scores when the vectors were searched
    elsewhere (retrieval/resident.py)."""
    scored = _given_bm25("SELECT unnest(%(vec_ids)s::uuid[])")
    return f"SELECT chunk_id::text, score FROM ({scored}) AS bm WHERE score >= %(floor)s"


def hybrid_sql(metric: str, *, with_floor: bool, exact: bool = False) -> str:
    """The vector top_k (part 0, best first), the cosine of given chunks (part 1: the keyword
    candidates, `%(kw_ids)s`) and the BM25 of the vector candidates (part 2), with the query's term
    weights (`%(wterms)s`, `%(ws)s`), average length (`%(avg)s`) and normaliser (`%(norm)s`) from
    keyword_sql(weights=True): the same arithmetic, over only the vector candidates' own postings."""
    rows = _embedded_chunks(metric, with_floor=with_floor)
    score = _similarity(metric)
    return (
        f"WITH vec AS MATERIALIZED (SELECT c.id, {score} AS score{rows}"
        f" {_order(metric, exact=exact)} LIMIT %(limit)s),"
        " ranked AS (SELECT id, score, row_number() OVER () AS n FROM vec),"
        f" cos AS (SELECT c.id, {score} AS score{rows} AND c.id = ANY(%(kw_ids)s::uuid[])),"
        f" bm AS ({_given_bm25('SELECT id FROM vec')})"
        " SELECT part, chunk_id, score FROM ("
        "  SELECT 0 AS part, id::text AS chunk_id, score, n FROM ranked"
        "  UNION ALL SELECT 1, id::text, score, 0 FROM cos"
        "  UNION ALL SELECT 2, chunk_id::text, score, 0 FROM bm WHERE score >= %(floor)s) AS parts"
        " ORDER BY part, n"
    )
