"""Vectors and BM25 postings in PostgreSQL.

Vectors live in the chunk table's `embedding` column (pgvector, HNSW); keyword postings in
`retrieval_keywordposting`, with per-workspace counts in `retrieval_keywordstats`. Filters, the score
floor and the workspace condition are all part of the SQL, so `LIMIT` applies to rows that qualify.
The search statements are composed in pgvector_sql.py, and the writes live in pgvector_writes.py:
this module is the store, which runs the searches and reads their rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
from django.db import connection, transaction

from retrieval import keyword
from retrieval.stores.base import (
    Filters,
    HybridHits,
    VectorHit,
    VectorRecord,
    VectorStore,
    VectorStoreError,
)
from retrieval.stores.pgvector_sql import (
    METRICS,
    filter_sql,
    given_bm25_sql,
    hybrid_sql,
    keyword_params,
    keyword_sql,
    vector_sql,
)
from retrieval.stores.pgvector_writes import delete_postings, write_postings, write_vectors
from sources.models import EMBEDDING_DIMENSIONS

if TYPE_CHECKING:
    from retrieval.resident import ResidentVectors

#: hnsw.ef_search by the number of vectors in the chunk table (the graph is shared by all workspaces, so
#: its size, not the workspace's, decides how far a search must look). The scale benchmark's recall@10:
#: 0.99 at 100k with 100; at 1M, 0.85-0.91 with 100 and 0.97 with 200 (docs/BENCHMARKS.md).
EF_SEARCH_STEPS = ((500_000, 200), (0, 100))
#: How long a process trusts its estimate of the table's size.
TABLE_SIZE_TTL = 300.0
#: A workspace with at most this many vectors is searched exactly when its HNSW scan comes back short. The
#: graph is shared by every workspace and pgvector's iterative scan stops after hnsw.max_scan_tuples
#: (20,000) of its tuples (or its memory), so a small workspace whose chunks are not among the nearest of
#: all workspaces' loses some or all of them when the planner takes the index (as it does when its
#: statistics overrate the workspace). Exact search over this many rows costs a few tens of ms.
EXACT_FALLBACK_MAX_ROWS = 20_000
#: Up to this many chunks passing a filter, a filtered keyword search ranks them by id (see _rank_filtered).
FILTERED_IDS_CAP = 10_000


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form. Python floats print the shortest repr that reads back as the same
    float32 (a fixed `%.7g` does not always), and `tolist()` avoids formatting numpy scalars."""
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def ef_search_for(table_rows: float) -> int:
    return next(ef for rows, ef in EF_SEARCH_STEPS if table_rows >= rows)


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
        # The copies hold unit vectors and compare them by dot product: the cosine, not l2 or ip.
        self.searches_resident_vectors = metric == "cosine"

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
            owned, reindexed = write_vectors(
                cursor, workspace_id=workspace_id, records=records, model_name=model_name
            )
            # Postings exist only beside a vector (written and removed together), so chunks that had
            # none, which is every chunk ingestion writes, have no postings to replace.
            if reindexed:
                delete_postings(cursor, workspace_id=workspace_id, chunk_ids=reindexed)
            write_postings(
                cursor, workspace_id=workspace_id, records=[r for r in records if r.chunk_id in owned]
            )

    def delete(self, *, workspace_id: int, chunk_ids: list[str]) -> None:
        if not chunk_ids:
            return
        with transaction.atomic(), connection.cursor() as cursor:
            delete_postings(cursor, workspace_id=workspace_id, chunk_ids=chunk_ids)
            cursor.execute(
                "UPDATE sources_chunk SET embedding = NULL WHERE workspace_id = %s AND id = ANY(%s::uuid[])",
                [workspace_id, chunk_ids],
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
        where, filter_params = filter_sql(filters)
        sql = partial(
            vector_sql,
            self.metric,
            with_floor=min_score is not None,
            where=where,
            given_ids=chunk_ids is not None,
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
                cursor.execute(sql(), params)  # read by primary key: no index scan to set up
                rows = cursor.fetchall()
            else:
                rows = self._nearest(cursor, sql, params, top_k, found=len)
        # Given chunks come back unordered (vector_sql says why): ranked here.
        hits = [VectorHit(chunk_id=cid, score=float(score)) for cid, score in rows]
        if chunk_ids is not None:
            hits = sorted(hits, key=lambda h: (-h.score, h.chunk_id))[:top_k]
        return hits

    def _nearest(
        self,
        cursor: Any,
        sql: Callable[..., str],
        params: dict[str, Any],
        top_k: int,
        found: Callable[[list[tuple]], int],
    ) -> list[tuple]:
        """A nearest-neighbour statement's rows (`sql(exact=...)` composes it) through the HNSW index; by
        exact search when the scan found fewer than top_k (`found` counts the statement's nearest rows)
        and the workspace has more vectors of the model than that, but few enough to scan
        (EXACT_FALLBACK_MAX_ROWS)."""
        rows = self._hnsw_select(cursor, max(self._ef_search(cursor), top_k), sql(), params)
        short = found(rows)
        if short >= top_k:
            return rows
        cursor.execute(
            "SELECT count(*) FROM (SELECT 1 FROM sources_chunk WHERE workspace_id = %s"
            " AND embedding IS NOT NULL AND embedding_model = %s LIMIT %s) AS vectors",
            [params["workspace"], params["model"], EXACT_FALLBACK_MAX_ROWS + 1],
        )
        vectors = cursor.fetchone()[0]
        if short < vectors <= EXACT_FALLBACK_MAX_ROWS:
            cursor.execute(sql(exact=True), params)
            return cursor.fetchall()
        return rows

    def _hnsw_select(self, cursor: Any, ef_search: int, sql: str, params: dict[str, Any]) -> list[tuple]:
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
        params = keyword_params(
            workspace_id=workspace_id, terms=terms, min_score=min_score, k1=k1, b=b, chunk_ids=chunk_ids
        )
        params.update(filter_params)
        with connection.cursor() as cursor:
            if not where:
                cursor.execute(keyword_sql(chunk_ids=chunk_ids), {**params, "limit": top_k})
                rows = cursor.fetchall()
            else:
                # Filters (the agent, the audiences) usually pass most chunks. Rank without them first
                # and keep the first top_k that pass: exact whenever that many pass among the first
                # candidates. Joining every posting row to its chunk for the filter is what made a
                # filtered keyword search many times slower at 100k chunks; only the candidates are joined.
                candidates = max(top_k * 10, 200)
                sql = keyword_sql(chunk_ids=chunk_ids, passing=where)
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
        its chunk instead was slow for a small agent in a large table (docs/BENCHMARKS.md)."""
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
            cursor.execute(keyword_sql(chunk_ids=allowed), {**params, "ids": allowed, "limit": top_k})
        else:
            sql = keyword_sql(chunk_ids=chunk_ids, join_filter=where)
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
        resident: ResidentVectors | None = None,
    ) -> HybridHits:
        """Two statements instead of four, with the base class's answer. The BM25 ranking (while the query
        is embedded) also returns the query terms' weights; then one statement finds the vector top_k,
        the cosine of the keyword candidates, and the BM25 of the vector candidates from those weights
        and only their own postings (the chunk index) rather than every posting of the terms again.
        Filtered searches, whose keyword ranking has its own fallbacks, take the base class's path.
        `resident`: the workspace's vectors held in memory (retrieval/resident.py), searched there."""
        if filters or not terms:
            return super().hybrid_search(
                workspace_id=workspace_id, vector=vector, terms=terms, top_k=top_k, model_name=model_name,
                min_score=min_score, filters=filters, k1=k1, b=b,
            )  # fmt: skip
        params = keyword_params(
            workspace_id=workspace_id, terms=terms, min_score=min_score, k1=k1, b=b, chunk_ids=None
        )
        params["limit"] = top_k
        with connection.cursor() as cursor:
            cursor.execute(keyword_sql(chunk_ids=None, weights=True), params)
            parts = cursor.fetchall()
            by_keyword = [
                VectorHit(cid, min(1.0, float(score))) for part, cid, score, _t in parts if part == 0
            ]
            weights = [(term, w) for part, _cid, w, term in parts if part == 1]
            constants = {part: value for part, _cid, value, _t in parts if part in (2, 3)}
            params.update(
                kw_ids=[h.chunk_id for h in by_keyword],
                wterms=[term for term, _w in weights],
                ws=[w for _term, w in weights],
                avg=constants.get(2),
                norm=constants.get(3),
            )
            if resident is not None and (resident.workspace_id, resident.model_name) != (
                workspace_id,
                model_name,
            ):
                raise VectorStoreError("Vectors of another workspace or model were offered to a search.")
            if resident is not None and self.searches_resident_vectors:
                rest = self._vectors_in_memory(cursor, resident, vector(), params, top_k, min_score)
            else:
                params.update(vector=vector_literal(vector()), model=model_name)
                rest = self._vectors_in_sql(cursor, params, top_k, min_score)
        by_vector, rescored_vector, rescored_keyword = rest
        vector_scores = {h.chunk_id: h.score for h in by_vector}
        keyword_scores = {h.chunk_id: h.score for h in by_keyword}
        # As the base class: keyword candidates get their cosine, then vector candidates their BM25.
        vector_scores.update(
            {c: rescored_vector[c] for c in keyword_scores if c not in vector_scores and c in rescored_vector}
        )
        keyword_scores.update(
            {
                c: rescored_keyword[c]
                for c in vector_scores
                if c not in keyword_scores and c in rescored_keyword
            }
        )
        return HybridHits(by_vector, by_keyword, vector_scores, keyword_scores)

    def _vectors_in_sql(
        self, cursor: Any, params: dict[str, Any], top_k: int, min_score: float | None
    ) -> tuple[list[VectorHit], dict[str, float], dict[str, float]]:
        """The vector top_k, the keyword candidates' cosine and the vector candidates' BM25: one statement."""
        sql = partial(hybrid_sql, self.metric, with_floor=min_score is not None)
        rows = self._nearest(cursor, sql, params, top_k, found=lambda rows: sum(r[0] == 0 for r in rows))
        by_vector = [VectorHit(cid, float(score)) for part, cid, score in rows if part == 0]
        rescored_vector = {cid: float(score) for part, cid, score in rows if part == 1}
        rescored_keyword = {cid: min(1.0, float(score)) for part, cid, score in rows if part == 2}
        return by_vector, rescored_vector, rescored_keyword

    @staticmethod
    def _vectors_in_memory(
        cursor: Any,
        resident: ResidentVectors,
        query: np.ndarray,
        params: dict[str, Any],
        top_k: int,
        min_score: float | None,
    ) -> tuple[list[VectorHit], dict[str, float], dict[str, float]]:
        """The same three from the workspace's vectors in memory (exact, where HNSW is approximate), and
        the vector candidates' BM25 from their own postings: a statement without a graph to walk."""
        by_vector = resident.top(query, top_k, min_score)
        rescored_vector = resident.scores(query, params["kw_ids"], min_score)
        rescored_keyword: dict[str, float] = {}
        if by_vector:
            cursor.execute(given_bm25_sql(), {**params, "vec_ids": [h.chunk_id for h in by_vector]})
            rescored_keyword = {cid: min(1.0, float(score)) for cid, score in cursor.fetchall()}
        return by_vector, rescored_vector, rescored_keyword

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

    def vectors(self, *, workspace_id: int, chunk_ids: list[str], model_name: str) -> dict[str, np.ndarray]:
        if not chunk_ids:
            return {}
        with connection.cursor() as cursor:
            # Binary, as retrieval/resident.py reads them: vector_send is two int16 then big-endian float32s.
            cursor.execute(
                "SELECT id::text, vector_send(embedding) FROM sources_chunk WHERE workspace_id = %s"
                " AND id = ANY(%s::uuid[]) AND embedding IS NOT NULL AND embedding_model = %s",
                [workspace_id, chunk_ids, model_name],
            )
            return {
                cid: np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)
                for cid, data in cursor.fetchall()
            }

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
        """For bulk loads: inserting into the graph is most of a one-document upsert, and rebuilding it
        once beats a million single inserts (docs/BENCHMARKS.md). Searches are exact meanwhile."""
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {self.index_name()}")
