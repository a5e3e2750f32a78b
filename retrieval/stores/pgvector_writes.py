"""How PgVectorStore writes: vectors onto the chunk rows, BM25 postings, the workspace's statistics.

Apart from the store's searches because they share nothing with them but the tables. Each function
runs on the caller's cursor, inside the caller's transaction (upsert and delete open one), so a
chunk's vector, its postings and the statistics change together.
"""

from __future__ import annotations

import struct
import uuid
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from retrieval.stores.base import VectorRecord, VectorStoreError


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


def write_vectors(
    cursor: Any, *, workspace_id: int, records: list[VectorRecord], model_name: str
) -> tuple[set[str], list[str]]:
    """Vectors go by binary COPY into a temporary table, then one UPDATE joins it: formatting them as
    text was a visible share of a bulk upsert, binary a small fraction of it (docs/BENCHMARKS.md). Returns
    the ids of the chunks written (those of this workspace), and those of them that already had
    a vector."""
    raw = cursor.cursor
    _enable_binary_vectors(raw)
    cursor.execute(
        "CREATE TEMPORARY TABLE IF NOT EXISTS grounded_vector_batch (id uuid, e vector) ON COMMIT DELETE ROWS"
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


def write_postings(cursor: Any, *, workspace_id: int, records: list[VectorRecord]) -> None:
    """COPY the records' postings (one row a term, with the chunk's length) and count them in the
    workspace's statistics. The records must be chunks of this workspace without postings."""
    rows = [
        (workspace_id, r.chunk_id, term, tf, sum(r.terms.values()))
        for r in records
        for term, tf in r.terms.items()
    ]
    with cursor.cursor.copy(
        "COPY retrieval_keywordposting (workspace_id, chunk_id, term, tf, length) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)
    indexed = [r for r in records if r.terms]
    _add_stats(cursor, workspace_id, len(indexed), sum(sum(r.terms.values()) for r in indexed))


def delete_postings(cursor: Any, *, workspace_id: int, chunk_ids: Iterable[str]) -> None:
    """Remove the chunks' postings and take them out of the workspace's statistics."""
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
        _add_stats(cursor, workspace_id, -removed, -removed_length)


def _add_stats(cursor: Any, workspace_id: int, chunks: int, length: int) -> None:
    """BM25 needs the workspace's chunk count and average length: kept as running sums."""
    if not chunks:
        return
    cursor.execute(
        "INSERT INTO retrieval_keywordstats (workspace_id, chunk_count, total_length) VALUES (%s, %s, %s)"
        " ON CONFLICT (workspace_id) DO UPDATE SET"
        " chunk_count = retrieval_keywordstats.chunk_count + EXCLUDED.chunk_count,"
        " total_length = retrieval_keywordstats.total_length + EXCLUDED.total_length",
        [workspace_id, chunks, length],
    )
