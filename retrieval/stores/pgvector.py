"""Vectors and BM25 postings in PostgreSQL.

Vectors live in the chunk table's `embedding` column (pgvector, HNSW); keyword postings in
`retrieval_keywordposting`, with per-workspace counts in `retrieval_keywordstats`. Filters, the score
floor and the workspace condition are all part of the SQL, so `LIMIT` applies to rows that qualify.
Identifiers never come from callers: the metric picks from a fixed table, and filter keys are validated
and passed as parameters.
"""

from __future__ import annotations

import json
import struct
import time
import uuid
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import psycopg
from django.db import connection, transaction
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from retrieval import keyword
from retrieval.stores.base import (
    Filters,
    HybridHits,
    VectorHit,
    VectorRecord,
    VectorStore,
    VectorStoreError,
    validate_filters,
)
from sources.models import EMBEDDING_DIMENSIONS

# metric -> (distance operator, HNSW operator class, SQL turning the distance {d} into a similarity)
METRICS: dict[str, tuple[str, str, str]] = {
    "cosine": ("<=>", "vector_cosine_ops", "1 - {d}"),
    "l2": ("<->", "vector_l2_ops", "1 - {d} * {d} / 2"),  # for unit vectors, |a-b|^2 = 2 - 2 cos
    "ip": ("<#>", "vector_ip_ops", "-{d}"),  # pgvector returns the negative inner product
}


#: hnsw.ef_search by the number of vectors in the chunk table (the graph is shared by all workspaces, so
#: its size, not the workspace's, decides how far a search must look). The scale benchmark's recall@10:
#: 0.99 at 100k with 100; at 1M, 0.85-0.91 with 100 and 0.97 with 200 (docs/BENCHMARKS.md).
EF_SEARCH_STEPS = ((500_000, 200), (0, 100))
#: How long a process trusts its estimate of the table's size.
TABLE_SIZE_TTL = 300.0
#: Up to this many chunks passing a filter, a filtered keyword search ranks them by id (see _rank_filtered).
FILTERED_IDS_CAP = 10_000


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form. Python floats print the shortest repr that reads back as the same
    float32 (a fixed `%.7g` does not always), and `tolist()` avoids formatting numpy scalars."""
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def ef_search_for(table_rows: float) -> int:
    return next(ef for rows, ef in EF_SEARCH_STEPS if table_rows >= rows)


class _VectorBinaryDumper(Dumper):
    """pgvector's binary input: dimensions and a reserved word (uint16 each), then big-endian float32s."""

    format = Format.BINARY

    def dump(self, obj: np.ndarray) -> bytes:
        values = np.asarray(obj, dtype=">f4")
        return struct.pack(">HH", values.shape[0], 0) + values.tobytes()


class _BinaryVectorMarker:
    """Only registers the dumper under the vector type's oid; COPY picks dumpers by oid (set_types)."""


#: The vector type's oid differs per database: looked up once per psycopg connection.
_vector_types: weakref.WeakKeyDictionary[Any, tuple[TypeInfo, type[Dumper]]] = weakref.WeakKeyDictionary()


def _enable_binary_vectors(raw_cursor: Any) -> None:
    """Let this psycopg cursor COPY numpy vectors in binary (cursors copy the connection's adapters
    when created, so the registration goes on the cursor itself)."""
    known = _vector_types.get(raw_cursor.connection)
    if known is None:
        info = TypeInfo.fetch(raw_cursor.connection, "vector")
        if info is None:
            raise VectorStoreError("The vector type is missing: is the pgvector extension installed?")
        known = (info, type("VectorDumper", (_VectorBinaryDumper,), {"oid": info.oid}))
        _vector_types[raw_cursor.connection] = known
    info, dumper = known
    info.register(raw_cursor)
    raw_cursor.adapters.register_dumper(_BinaryVectorMarker, dumper)


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


class PgVectorStore(VectorStore):
    def __init__(
        self,
        metric: str = "cosine",
        ef_search: int | str = "auto",
        maintenance_work_mem: str = "1GB",
        **_options: object,
    ) -> None:
        if metric not in METRICS:
            raise TypeError(f"metric must be one of {sorted(METRICS)}, not {metric!r}")
        self.metric = metric
        #: "auto" follows the table's size (EF_SEARCH_STEPS); a number fixes it.
        self.ef_search: int | None = None if str(ef_search) == "auto" else int(ef_search)
        self.maintenance_work_mem = maintenance_work_mem
        self._table_rows: tuple[float, float] | None = None  # (estimate, monotonic time read)

    # --- writes ---------------------------------------------------------------------------------

    def upsert(self, *, workspace_id: int, records: list[VectorRecord], model_name: str) -> None:
        if not records:
            return
        if len(records[0].vector) != EMBEDDING_DIMENSIONS:
            raise VectorStoreError(
                f"The embedder makes {len(records[0].vector)}-dimensional vectors but the pgvector column "
                f"holds {EMBEDDING_DIMENSIONS}; a new dimension needs a migration and a reindex."
            )
        with transaction.atomic(), connection.cursor() as cursor:
            # Only chunks of this workspace get vectors and postings, whatever ids a caller passes.
            owned, reindexed = self._write_vectors(cursor, workspace_id, records, model_name)
            # Postings exist only beside a vector (written and removed together), so chunks that had
            # none, which is every chunk ingestion writes, have no postings to replace.
            if reindexed:
                self._delete_postings(cursor, workspace_id, reindexed)
            rows = [
                (workspace_id, r.chunk_id, term, tf, sum(r.terms.values()))
                for r in records
                if r.chunk_id in owned
                for term, tf in r.terms.items()
            ]
            with cursor.cursor.copy(
                "COPY retrieval_keywordposting (workspace_id, chunk_id, term, tf, length) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
            indexed = [r for r in records if r.chunk_id in owned and r.terms]
            self._add_stats(cursor, workspace_id, len(indexed), sum(sum(r.terms.values()) for r in indexed))

    @staticmethod
    def _write_vectors(
        cursor: Any, workspace_id: int, records: list[VectorRecord], model_name: str
    ) -> tuple[set[str], list[str]]:
        """Vectors go by binary COPY into a temporary table, then one UPDATE joins it: formatting them as
        text took ~13 % of a bulk upsert (0.2 s per 1,000 vectors against 0.01 s in binary). Returns
        the ids of the chunks written (those of this workspace), and those of them that already had
        a vector."""
        raw = cursor.cursor
        _enable_binary_vectors(raw)
        cursor.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS grounded_vector_batch (id uuid, e vector)"
            " ON COMMIT DELETE ROWS"
        )
        with raw.copy("COPY grounded_vector_batch (id, e) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["uuid", "vector"])
            for record in records:
                copy.write_row((uuid.UUID(str(record.chunk_id)), record.vector))
        # The id list tells the planner how few rows change (it has no statistics on the temporary
        # table and otherwise joins it to the whole chunk table).
        # `before` reads the rows as they were when the statement started, the UPDATE changes them.
        cursor.execute(
            "WITH before AS (SELECT c.id, c.embedding IS NOT NULL AS indexed FROM sources_chunk c"
            "  WHERE c.id = ANY(%(ids)s::uuid[]) AND c.workspace_id = %(workspace)s),"
            " written AS (UPDATE sources_chunk AS c SET embedding = v.e, embedding_model = %(model)s"
            "  FROM grounded_vector_batch AS v WHERE c.id = v.id AND c.id = ANY(%(ids)s::uuid[])"
            "  AND c.workspace_id = %(workspace)s RETURNING c.id)"
            " SELECT w.id::text, b.indexed FROM written w JOIN before b ON b.id = w.id",
            {"ids": [r.chunk_id for r in records], "workspace": workspace_id, "model": model_name},
        )
        written = cursor.fetchall()
        # Emptied at commit too, but an outer transaction may call upsert again before it commits.
        cursor.execute("DELETE FROM grounded_vector_batch")
        return {cid for cid, _ in written}, [cid for cid, indexed in written if indexed]

    def delete(self, *, workspace_id: int, chunk_ids: list[str]) -> None:
        if not chunk_ids:
            return
        with transaction.atomic(), connection.cursor() as cursor:
            self._delete_postings(cursor, workspace_id, chunk_ids)
            cursor.execute(
                "UPDATE sources_chunk SET embedding = NULL WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
                [workspace_id, chunk_ids],
            )

    def _delete_postings(self, cursor: Any, workspace_id: int, chunk_ids: Iterable[str]) -> None:
        # Served by the (chunk, workspace) index whatever the statistics say (see retrieval 0002).
        cursor.execute(
            "WITH gone AS (DELETE FROM retrieval_keywordposting WHERE chunk_id = ANY(%s::uuid[])"
            " AND workspace_id = %s RETURNING chunk_id, length)"
            " SELECT count(DISTINCT chunk_id), coalesce(sum(length), 0) FROM"
            " (SELECT DISTINCT chunk_id, length FROM gone) AS per_chunk",
            [list(chunk_ids), workspace_id],
        )
        removed, removed_length = cursor.fetchone()
        if removed:
            self._add_stats(cursor, workspace_id, -removed, -removed_length)

    @staticmethod
    def _add_stats(cursor: Any, workspace_id: int, chunks: int, length: int) -> None:
        if not chunks:
            return
        cursor.execute(
            "INSERT INTO retrieval_keywordstats (workspace_id, chunk_count, total_length) VALUES (%s, %s, %s)"
            " ON CONFLICT (workspace_id) DO UPDATE SET"
            " chunk_count = retrieval_keywordstats.chunk_count + EXCLUDED.chunk_count,"
            " total_length = retrieval_keywordstats.total_length + EXCLUDED.total_length",
            [workspace_id, chunks, length],
        )

    # --- reads ----------------------------------------------------------------------------------

    def search(
        self,
        *,
        workspace_id: int,
        vector: np.ndarray,
        top_k: int,
        model_name: str,
        min_score: float | None = None,
        filters: Filters | None = None,
        chunk_ids: list[str] | None = None,
    ) -> list[VectorHit]:
        operator, _opclass, similarity = METRICS[self.metric]
        score_sql = similarity.format(d=f"(c.embedding {operator} %(vector)s::vector)")
        where, filter_params = filter_sql(filters)
        floor = f" AND {score_sql} >= %(floor)s" if min_score is not None else ""
        # Scoring a few given chunks must not go through the HNSW index: an index scan filtered down to
        # a handful of ids walks most of the graph (550 ms at 100k chunks). Without ORDER BY on the
        # distance the planner reads them by primary key; they are ranked here instead.
        order = (
            ""
            if chunk_ids is not None
            else f" ORDER BY c.embedding {operator} %(vector)s::vector LIMIT %(limit)s"
        )
        if chunk_ids is not None:
            where += " AND c.id = ANY(%(ids)s::uuid[])"
        sql = (
            f"SELECT c.id::text, {score_sql} FROM sources_chunk c"
            " WHERE c.workspace_id = %(workspace)s AND c.embedding IS NOT NULL"
            f" AND c.embedding_model = %(model)s{floor}{where}{order}"
        )
        params: dict[str, Any] = {
            "vector": vector_literal(vector),
            "workspace": workspace_id,
            "model": model_name,
            "floor": min_score,
            "limit": top_k,
            "ids": chunk_ids,
            **filter_params,
        }
        with connection.cursor() as cursor:
            if chunk_ids is not None:
                cursor.execute(sql, params)  # read by primary key: no index scan to set up
                rows = cursor.fetchall()
            else:
                rows = self._hnsw_select(cursor, max(self._ef_search(cursor), top_k), sql, params)
        hits = [VectorHit(chunk_id=cid, score=float(score)) for cid, score in rows]
        if chunk_ids is not None:
            hits = sorted(hits, key=lambda h: (-h.score, h.chunk_id))[:top_k]
        return hits

    @staticmethod
    def _hnsw_select(cursor: Any, ef_search: int, sql: str, params: dict[str, Any]) -> list[tuple]:
        """Run a search through the HNSW index. A filtered HNSW scan stops after ef_search candidates;
        iterative scans go on until enough rows of this workspace (and filters, and floor) are found
        (pgvector >= 0.8). Both settings are LOCAL to the search's transaction. With client-side binding
        (Django's default) they go with the query in one round trip: several statements sent as one
        simple query run in one implicit transaction. A BEGIN, two SETs and a COMMIT of their own were
        four more round trips, a third of a hybrid search's SQL time at 5,748 chunks."""
        settings = (
            f"SET LOCAL hnsw.ef_search = {int(ef_search)}; SET LOCAL hnsw.iterative_scan = strict_order"
        )
        if isinstance(cursor.cursor, psycopg.ClientCursor):
            cursor.execute(f"{settings}; {sql}", params)
            while cursor.description is None and cursor.cursor.nextset():
                pass  # past the SETs' results to the query's
            return cursor.fetchall()
        # Server-side binding (OPTIONS server_side_binding) sends one statement at a time.
        with transaction.atomic():
            for setting in settings.split("; "):
                cursor.execute(setting)
            cursor.execute(sql, params)
            return cursor.fetchall()

    def keyword_search(
        self,
        *,
        workspace_id: int,
        terms: dict[str, int],
        top_k: int,
        min_score: float | None = None,
        filters: Filters | None = None,
        chunk_ids: list[str] | None = None,
        k1: float = keyword.K1,
        b: float = keyword.B,
    ) -> list[VectorHit]:
        if not terms or chunk_ids == []:
            return []
        where, filter_params = filter_sql(filters)
        params = {
            "k1": float(k1),
            "b": float(b),
            "terms": list(terms),
            "counts": list(terms.values()),
            "workspace": workspace_id,
            "floor": float(min_score or 0.0),
            "ids": chunk_ids,
            **filter_params,
        }
        with connection.cursor() as cursor:
            if not where:
                cursor.execute(self._keyword_sql(chunk_ids=chunk_ids), {**params, "limit": top_k})
                rows = cursor.fetchall()
            else:
                # Filters (the agent, the audiences) usually pass most chunks. Rank without them first
                # and keep the first top_k that pass: exact whenever that many pass among the first
                # candidates. Joining every posting row to its chunk for the filter is what made a
                # filtered keyword search ~30x slower at 100k chunks; only the candidates are joined.
                candidates = max(top_k * 10, 200)
                sql = self._keyword_sql(chunk_ids=chunk_ids, passing=where)
                cursor.execute(sql, {**params, "limit": candidates})
                ranked = cursor.fetchall()
                rows = [(cid, score) for cid, score, passes in ranked if passes][:top_k]
                if len(rows) < top_k and len(ranked) == candidates:
                    rows = self._rank_filtered(cursor, params, where, filter_params, chunk_ids, top_k)
            return [VectorHit(chunk_id=cid, score=min(1.0, float(score))) for cid, score in rows]

    def _rank_filtered(
        self,
        cursor: Any,
        params: dict[str, Any],
        where: str,
        filter_params: dict[str, Any],
        chunk_ids: list[str] | None,
        top_k: int,
    ) -> list[tuple[str, float]]:
        """Too few of the best chunks passed the filter, so it passes few chunks (a small agent, a rare
        audience): rank those chunks themselves. When they are few enough, their ids (read through the
        metadata GIN index) restrict the postings scan; joining every posting of the query's terms to
        its chunk instead took 63 ms p50 / 203 ms p95 for a 2,000-chunk agent at 1M chunks."""
        cursor.execute(
            f"SELECT c.id::text FROM sources_chunk c WHERE c.workspace_id = %(workspace)s{where}"
            " LIMIT %(cap)s",
            {**filter_params, "workspace": params["workspace"], "cap": FILTERED_IDS_CAP + 1},
        )
        allowed = [row[0] for row in cursor.fetchall()]
        if len(allowed) <= FILTERED_IDS_CAP:
            if chunk_ids is not None:
                given = set(chunk_ids)
                allowed = [cid for cid in allowed if cid in given]
            if not allowed:
                return []
            cursor.execute(self._keyword_sql(chunk_ids=allowed), {**params, "ids": allowed, "limit": top_k})
        else:
            sql = self._keyword_sql(chunk_ids=chunk_ids, join_filter=where)
            cursor.execute(sql, {**params, "limit": top_k})
        return cursor.fetchall()

    def hybrid_search(
        self,
        *,
        workspace_id: int,
        vector: Callable[[], np.ndarray],
        terms: dict[str, int],
        top_k: int,
        model_name: str,
        min_score: float | None = None,
        filters: Filters | None = None,
        k1: float = keyword.K1,
        b: float = keyword.B,
    ) -> HybridHits:
        """Two statements instead of four, with the base class's answer. The BM25 ranking (while the query
        is embedded) also returns the query terms' weights; then one statement finds the vector top_k,
        the cosine of the keyword candidates, and the BM25 of the vector candidates from those weights
        and only their own postings (the chunk index) rather than every posting of the terms again.
        Filtered searches, whose keyword ranking has its own fallbacks, take the base class's path."""
        if filters or not terms:
            return super().hybrid_search(
                workspace_id=workspace_id, vector=vector, terms=terms, top_k=top_k, model_name=model_name,
                min_score=min_score, filters=filters, k1=k1, b=b,
            )  # fmt: skip
        params: dict[str, Any] = {
            "k1": float(k1),
            "b": float(b),
            "terms": list(terms),
            "counts": list(terms.values()),
            "workspace": workspace_id,
            "floor": float(min_score or 0.0),
            "ids": None,
            "limit": top_k,
        }
        with connection.cursor() as cursor:
            cursor.execute(self._keyword_sql(chunk_ids=None, weights=True), params)
            parts = cursor.fetchall()
            by_keyword = [
                VectorHit(cid, min(1.0, float(score))) for part, cid, score, _t in parts if part == 0
            ]
            weights = [(term, w) for part, _cid, w, term in parts if part == 1]
            constants = {part: value for part, _cid, value, _t in parts if part in (2, 3)}
            params.update(
                vector=vector_literal(vector()),
                model=model_name,
                kw_ids=[h.chunk_id for h in by_keyword],
                wterms=[term for term, _w in weights],
                ws=[w for _term, w in weights],
                avg=constants.get(2),
                norm=constants.get(3),
            )
            sql = self._rescored_sql(min_score is not None)
            rows = self._hnsw_select(cursor, max(self._ef_search(cursor), top_k), sql, params)
        by_vector = [VectorHit(cid, float(score)) for part, cid, score in rows if part == 0]
        vector_scores = {h.chunk_id: h.score for h in by_vector}
        keyword_scores = {h.chunk_id: h.score for h in by_keyword}
        # As the base class: keyword candidates get their cosine, then vector candidates their BM25.
        rescored_vector = {cid: float(score) for part, cid, score in rows if part == 1}
        vector_scores.update(
            {c: rescored_vector[c] for c in keyword_scores if c not in vector_scores and c in rescored_vector}
        )
        rescored_keyword = {cid: min(1.0, float(score)) for part, cid, score in rows if part == 2}
        keyword_scores.update(
            {
                c: rescored_keyword[c]
                for c in vector_scores
                if c not in keyword_scores and c in rescored_keyword
            }
        )
        return HybridHits(by_vector, by_keyword, vector_scores, keyword_scores)

    def _rescored_sql(self, with_floor: bool) -> str:
        """The vector top_k (part 0, best first), the cosine of given chunks (part 1: the keyword
        candidates) and the BM25 of the vector candidates (part 2), with the query's term weights (`ws`),
        average length and normaliser from the keyword ranking: the same arithmetic as _keyword_sql."""
        operator, _opclass, similarity = METRICS[self.metric]
        score_sql = similarity.format(d=f"(c.embedding {operator} %(vector)s::vector)")
        rows = (
            " FROM sources_chunk c WHERE c.workspace_id = %(workspace)s AND c.embedding IS NOT NULL"
            " AND c.embedding_model = %(model)s" + (f" AND {score_sql} >= %(floor)s" if with_floor else "")
        )
        k1, b = "%(k1)s::float8", "%(b)s::float8"
        return (
            f"WITH vec AS MATERIALIZED (SELECT c.id, {score_sql} AS score{rows}"
            f"  ORDER BY c.embedding {operator} %(vector)s::vector LIMIT %(limit)s),"
            " ranked AS (SELECT id, score, row_number() OVER () AS n FROM vec),"
            f" cos AS (SELECT c.id, {score_sql} AS score{rows} AND c.id = ANY(%(kw_ids)s::uuid[])),"
            f" bm AS (SELECT p.chunk_id, sum(q.w * p.tf * ({k1} + 1)"
            f"   / (p.tf + {k1} * (1 - {b} + {b} * p.length / %(avg)s::float8))) / %(norm)s::float8 AS score"
            "  FROM retrieval_keywordposting p"
            "  JOIN unnest(%(wterms)s::text[], %(ws)s::float8[]) AS q(term, w) ON q.term = p.term"
            "  WHERE p.workspace_id = %(workspace)s AND p.chunk_id IN (SELECT id FROM vec)"
            "  GROUP BY p.chunk_id)"
            " SELECT part, chunk_id, score FROM ("
            "  SELECT 0 AS part, id::text AS chunk_id, score, n FROM ranked"
            "  UNION ALL SELECT 1, id::text, score, 0 FROM cos"
            "  UNION ALL SELECT 2, chunk_id::text, score, 0 FROM bm WHERE score >= %(floor)s) AS parts"
            " ORDER BY part, n"
        )

    @staticmethod
    def _keyword_sql(
        *, chunk_ids: list[str] | None, passing: str = "", join_filter: str = "", weights: bool = False
    ) -> str:
        """BM25 in one statement: sum over query terms of idf * qtf * tf*(k1+1) / (tf + k1*(1-b+b*len/avg)),
        divided by the best score the query could reach so it lands in [0, 1] (keyword.max_score). idf is
        keyword.idf over the workspace's statistics, computed here rather than in Python: reading the
        statistics and document frequencies first cost two more round trips per search.

        `passing`: a filter condition on `c`; every ranked candidate comes back with whether it passes.
        `join_filter`: the filter joined to every posting instead (for filters that pass many chunks
        beyond FILTERED_IDS_CAP). k1 and b are the workspace's, bound as parameters."""
        k1, b = "%(k1)s::float8", "%(b)s::float8"
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
            " scored AS ("
            f"  SELECT p.chunk_id, sum(q.w * p.tf * ({k1} + 1)"
            f"   / (p.tf + {k1} * (1 - {b} + {b} * p.length / (SELECT avg_length FROM stats))))"
            f"   / (SELECT nullif(sum(w) * ({k1} + 1), 0) FROM q) AS score"
            f"  FROM postings p JOIN q ON q.term = p.term{join}"
            f"  WHERE TRUE{conditions} GROUP BY p.chunk_id),"
            " ranked AS (SELECT chunk_id, score FROM scored WHERE score >= %(floor)s"
            "  ORDER BY score DESC, chunk_id LIMIT %(limit)s)"
        )
        if weights:
            # The ranking (part 0), then what scores other chunks the same way (hybrid_search): each query
            # term's weight (part 1), the average length (2) and the normaliser (3).
            return ranking + (
                " SELECT 0 AS part, chunk_id::text AS chunk_id, score, NULL::text AS term FROM ranked"
                " UNION ALL SELECT 1, NULL, w, term FROM q"
                " UNION ALL SELECT 2, NULL, avg_length, NULL FROM stats"
                f" UNION ALL SELECT 3, NULL, (SELECT nullif(sum(w) * ({k1} + 1), 0) FROM q), NULL"
                " ORDER BY part, score DESC, chunk_id"
            )
        if not passing:
            return ranking + " SELECT chunk_id::text, score FROM ranked ORDER BY score DESC, chunk_id"
        return (
            ranking + " SELECT r.chunk_id::text, r.score, c.id IS NOT NULL FROM ranked r"
            f" LEFT JOIN sources_chunk c ON c.id = r.chunk_id{passing} ORDER BY r.score DESC, r.chunk_id"
        )

    def current_ef_search(self) -> int:
        with connection.cursor() as cursor:
            return self._ef_search(cursor)

    def _ef_search(self, cursor: Any) -> int:
        if self.ef_search is not None:
            return self.ef_search
        now = time.monotonic()
        if self._table_rows is None or now - self._table_rows[1] > TABLE_SIZE_TTL:
            # The planner's estimate (kept by ANALYZE and autovacuum): free, and close enough for a step.
            cursor.execute(
                "SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'sources_chunk'::regclass"
            )
            self._table_rows = (float(cursor.fetchone()[0]), now)
        return ef_search_for(self._table_rows[0])

    def count(self, *, workspace_id: int) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM sources_chunk WHERE workspace_id = %s AND embedding IS NOT NULL",
                [workspace_id],
            )
            return int(cursor.fetchone()[0])

    def point_ids(self, *, workspace_id: int) -> set[str]:
        # Vectors live on the chunk rows, so a vector without its chunk cannot exist here; postings are
        # tied to their chunk by a foreign key. What can drift is audited in ingestion/audit.py.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id::text FROM sources_chunk WHERE workspace_id = %s AND embedding IS NOT NULL",
                [workspace_id],
            )
            return {row[0] for row in cursor.fetchall()}

    def index_name(self) -> str:
        return "chunk_embedding_hnsw" if self.metric == "cosine" else f"chunk_embedding_hnsw_{self.metric}"

    def ensure_index(self) -> str:
        """Create the HNSW index for the configured metric if it is missing (cosine ships in migrations).

        The build gets `maintenance_work_mem` (default 1 GB): pgvector builds the graph in memory and
        falls back to a much slower on-disk build once it outgrows it (a 1M-vector graph is ~2 GB)."""
        _operator, opclass, _similarity = METRICS[self.metric]
        name = self.index_name()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT set_config('maintenance_work_mem', %s, true)", [self.maintenance_work_mem])
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON sources_chunk USING hnsw (embedding {opclass})"
                " WITH (m = 16, ef_construction = 64)"
            )
        return name

    def drop_index(self) -> None:
        """For bulk loads: inserting into the graph is ~80 % of a one-document upsert, and rebuilding it
        once is several times faster than a million single inserts. Searches are exact meanwhile."""
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {self.index_name()}")
