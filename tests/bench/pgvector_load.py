"""Loading a synthetic workspace into PostgreSQL for the scale benchmark: most of it with raw binary COPY
(the baseline), and samples through PgVectorStore.upsert into the full workspace (the measured path).

1. fill (the baseline): chunks 0..F-1 written with binary COPY straight into the real tables, chunk rows
   with their vectors plus their BM25 postings, BLOCK chunks a transaction, with the HNSW index dropped;
2. chunk rows for the remaining chunks, without vectors (what ingestion writes before calling the store);
3. bulk sample: BULK_SAMPLE chunks through `store.upsert`, BLOCK records a call, into the full
   workspace, still without the HNSW index (comparable with 1.);
4. the HNSW index rebuilt by `PgVectorStore.ensure_index()` (inserting a million vectors one graph
   insertion at a time takes hours on two cores, so large loads drop and rebuild it);
5. incremental sample: the last chunks, one document (CHUNKS_PER_DOCUMENT chunks) per `upsert` call, as
   ingestion calls it, into the full HNSW index; baseline: the same rows under fresh ids COPYed one
   document a transaction into the same tables, then deleted.
Rows are built from the models' fields, so a column added to Chunk does not break the benchmark.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tests.bench.corpus import BLOCK, Block, SyntheticCorpus

CHUNKS_PER_DOCUMENT = 10
#: Every SMALL_AGENT_EVERY-th document belongs to a second, small agent (0.2 % of the chunks): a
#: workspace's FAQ bot beside its big documentation bot, whose filter few chunks pass.
SMALL_AGENT_EVERY = 500
BULK_SAMPLE = int(os.environ.get("GROUNDED_BENCH_BULK_SAMPLE", "20000"))
POSTING_COLUMNS = "workspace_id, chunk_id, term, tf, length"  # as PgVectorStore.upsert writes them
POSTING_TYPES = ["int8", "uuid", "varchar", "int4", "int4"]
#: Enough for pgvector to build the HNSW graph of a million 384-d vectors in memory.
MAINTENANCE_WORK_MEM = os.environ.get("GROUNDED_BENCH_MAINTENANCE_WORK_MEM", "4GB")


def phases(size: int) -> tuple[int, int]:
    """Where the bulk sample starts and where the incremental sample starts (whole documents)."""
    incremental = max(CHUNKS_PER_DOCUMENT, min(5000, size // 20) // CHUNKS_PER_DOCUMENT * CHUNKS_PER_DOCUMENT)
    bulk = min(BULK_SAMPLE, (size - incremental) // 2)
    return size - incremental - bulk, size - incremental


class PgWorkspace:
    """One workspace (agent, source, documents, chunks) holding the synthetic corpus."""

    def __init__(self, corpus: SyntheticCorpus) -> None:
        from agents.models import Agent
        from ingestion.text.chunking import chunk_id
        from sources.models import Document, Source, Workspace
        from sources.tenancy import workspace_scope

        self.corpus = corpus
        self.workspace = Workspace.objects.create(name="Bench", slug=f"bench-scale-{os.getpid()}")
        with workspace_scope(self.workspace.id):
            self.agent = Agent.objects.create(name="Bench agent")
            self.small_agent = Agent.objects.create(name="Bench small agent")
            self.source = Source.objects.create(
                agent=self.agent, kind="text", title="Synthetic", status="done"
            )
        documents = [
            Document(
                workspace_id=self.workspace.id,
                source_id=self.source.id,
                url=f"https://bench.example/{n}",
                title=f"Document {n}",
                language="en",
                status="done",
            )
            for n in range(-(-corpus.size // CHUNKS_PER_DOCUMENT))
        ]
        self.document_ids = [d.id for d in Document.unscoped.bulk_create(documents, batch_size=5000)]
        self.ids: list[str] = []
        for b in range(corpus.blocks):
            block = corpus.block(b)
            self.ids.extend(
                str(chunk_id(self.document_ids[i // CHUNKS_PER_DOCUMENT], i % CHUNKS_PER_DOCUMENT, text))
                for i, text in enumerate(block.texts, start=block.start)
            )
        self._block: Block | None = None

    def block(self, index: int) -> Block:
        if self._block is None or self._block.start != index * BLOCK:
            self._block = self.corpus.block(index)
        return self._block

    def chunks(self, start: int, stop: int) -> Iterator[tuple[int, Block]]:
        """(chunk index, its block) for chunks start..stop-1."""
        for index in range(start, stop):
            yield index, self.block(index // BLOCK)

    def chunk(self, index: int, block: Block, chunk_id: str | None = None) -> Any:
        """The Chunk row ingestion would write (unsaved, without its vector)."""
        from sources.models import Chunk

        document_id = self.document_ids[index // CHUNKS_PER_DOCUMENT]
        chunk_id = chunk_id or self.ids[index]
        metadata = {
            "agent_id": self.agent_of(index),
            "document_id": document_id,
            "chunk_id": chunk_id,
            "url": f"https://bench.example/{document_id}",
            "workspace_id": self.workspace.id,
            "source_id": self.source.id,
            "lang": "en",
        }
        return Chunk(
            id=uuid.UUID(chunk_id),
            workspace_id=self.workspace.id,
            document_id=document_id,
            source_id=self.source.id,
            position=index % CHUNKS_PER_DOCUMENT,
            text=block.texts[index - block.start],
            metadata=metadata,
        )

    def agent_of(self, index: int) -> int:
        small = (index // CHUNKS_PER_DOCUMENT) % SMALL_AGENT_EVERY == 0
        return self.small_agent.id if small else self.agent.id

    def small_agent_chunks(self) -> list[int]:
        return [i for i in range(self.corpus.size) if self.agent_of(i) == self.small_agent.id]

    def records(self, start: int, stop: int) -> list[Any]:
        from retrieval.keyword import term_counts
        from retrieval.stores.base import VectorRecord

        return [
            VectorRecord(
                chunk_id=self.ids[i],
                vector=block.vectors[i - block.start],
                terms=term_counts(block.texts[i - block.start]),
            )
            for i, block in self.chunks(start, stop)
        ]

    def cleanup(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            for table in (
                "retrieval_keywordposting",
                "retrieval_keywordstats",
                "sources_chunk",
                "sources_document",
                "sources_source",
                "agents_agent",
            ):
                cursor.execute(f"DELETE FROM {table} WHERE workspace_id = %s", [self.workspace.id])
            cursor.execute("DELETE FROM sources_workspace WHERE id = %s", [self.workspace.id])


class RawWriter:
    """Binary COPY on a psycopg connection of its own, with pgvector's binary adapters."""

    def __init__(self, raw: Any) -> None:
        from django.db import connection

        from sources.models import Chunk

        self.raw = raw
        self.fields = Chunk._meta.concrete_fields
        types = dict(
            raw.execute(
                "SELECT column_name, udt_name FROM information_schema.columns"
                " WHERE table_name = 'sources_chunk'"
            ).fetchall()
        )
        self.columns = ", ".join(connection.ops.quote_name(f.column) for f in self.fields)
        self.types = [types[f.column] for f in self.fields]
        self.id_column = [f.column for f in self.fields].index("id")

    def chunk_row(self, chunk: Any, vector: np.ndarray | None) -> list[Any]:
        from django.db import connection

        return [
            vector if f.column == "embedding" else f.get_db_prep_save(f.pre_save(chunk, add=True), connection)
            for f in self.fields
        ]

    def copy(self, chunk_rows: list[list[Any]], posting_rows: list[tuple[Any, ...]]) -> float:
        """One transaction of chunk rows and postings; seconds."""
        started = time.perf_counter()
        with self.raw.cursor() as cursor:
            with cursor.copy(f"COPY sources_chunk ({self.columns}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(self.types)
                for row in chunk_rows:
                    copy.write_row(row)
            if posting_rows:
                with cursor.copy(
                    f"COPY retrieval_keywordposting ({POSTING_COLUMNS}) FROM STDIN (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(POSTING_TYPES)
                    for row in posting_rows:
                        copy.write_row(row)
        self.raw.commit()
        return time.perf_counter() - started

    def rows(
        self, space: PgWorkspace, start: int, stop: int, model_name: str, *, fresh_ids: bool = False
    ) -> tuple[list[list[Any]], list[tuple[Any, ...]]]:
        """Chunk rows with their vectors, and their postings."""
        chunk_rows, posting_rows = [], []
        for record, (i, block) in zip(space.records(start, stop), space.chunks(start, stop), strict=True):
            chunk = space.chunk(i, block, str(uuid.uuid4()) if fresh_ids else None)
            chunk.embedding_model = model_name
            chunk_rows.append(self.chunk_row(chunk, record.vector))
            length = sum(record.terms.values())
            posting_rows.extend(
                (space.workspace.id, chunk.id, term, tf, length) for term, tf in record.terms.items()
            )
        return chunk_rows, posting_rows


@contextmanager
def raw_writer() -> Iterator[RawWriter]:
    import psycopg
    from django.db import connection
    from pgvector.psycopg import register_vector

    settings = connection.settings_dict
    raw = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
    )
    try:
        register_vector(raw)
        yield RawWriter(raw)
    finally:
        raw.close()


class UpsertClock:
    """Times `store.upsert` calls, and how the time splits between its SQL statements (the rest is the
    vectors' text form, the postings COPY, the commit with its deferred foreign-key checks, and Python)."""

    def __init__(self) -> None:
        self.elapsed = 0.0
        self.statements: dict[str, float] = {}

    def _wrapper(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            statement = " ".join(sql.split()[:3])
            self.statements[statement] = self.statements.get(statement, 0.0) + time.perf_counter() - started

    def upsert(self, store: Any, workspace_id: int, records: list[Any], model_name: str) -> None:
        from django.db import connection

        started = time.perf_counter()
        with connection.execute_wrapper(self._wrapper):
            store.upsert(workspace_id=workspace_id, records=records, model_name=model_name)
        self.elapsed += time.perf_counter() - started

    def split(self) -> dict[str, float]:
        shares = {statement: seconds / self.elapsed for statement, seconds in self.statements.items()}
        shares["rest: vector text, COPY postings, commit"] = 1 - sum(shares.values())
        return {statement: round(share, 3) for statement, share in shares.items()}


def load(space: PgWorkspace, store: Any, model_name: str) -> dict[str, Any]:
    """Load the whole corpus; the throughput figures of each phase beside their baselines."""
    from django.db import connection

    from retrieval.stores.pgvector import vector_literal

    size = space.corpus.size
    bulk_start, incremental_start = phases(size)
    figures: dict[str, Any] = {}
    started = time.perf_counter()
    for vector in space.block(0).vectors:
        vector_literal(vector)
    figures["vector_literal_us_per_vector"] = round(
        (time.perf_counter() - started) / len(space.block(0).vectors) * 1e6
    )

    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX chunk_embedding_hnsw")
    try:
        with raw_writer() as writer:
            fill_seconds, total_length = 0.0, 0
            for start in range(0, bulk_start, BLOCK):
                rows = writer.rows(space, start, min(start + BLOCK, bulk_start), model_name)
                fill_seconds += writer.copy(*rows)
                total_length += sum(posting[3] for posting in rows[1])
            # The BM25 statistics the store keeps in step with its own writes (every chunk has terms).
            writer.raw.execute(
                "INSERT INTO retrieval_keywordstats (workspace_id, chunk_count, total_length)"
                " VALUES (%s, %s, %s)",
                [space.workspace.id, bulk_start, total_length],
            )
            writer.raw.commit()
            # Chunk rows without vectors for what the store will index.
            chunk_seconds = 0.0
            for start in range(bulk_start, size, BLOCK):
                stop = min(start + BLOCK, size)
                chunk_rows = [
                    writer.chunk_row(space.chunk(i, block), None) for i, block in space.chunks(start, stop)
                ]
                chunk_seconds += writer.copy(chunk_rows, [])
        clock = UpsertClock()
        for start in range(bulk_start, incremental_start, BLOCK):
            records = space.records(start, min(start + BLOCK, incremental_start))
            clock.upsert(store, space.workspace.id, records, model_name)
        figures["chunk_rows_copy_per_s"] = round((size - bulk_start) / chunk_seconds)
        figures["bulk"] = {
            "raw_copy_chunks": bulk_start,
            "store_chunks": incremental_start - bulk_start,
            "chunks_per_call": BLOCK,
            "store_upsert_chunks_per_s": round((incremental_start - bulk_start) / clock.elapsed),
            "raw_copy_chunks_per_s": round(bulk_start / fill_seconds),
            "store_vs_raw_copy_time_ratio": round(
                clock.elapsed / (incremental_start - bulk_start) / (fill_seconds / bulk_start), 2
            ),
            "store_upsert_time_split": clock.split(),
        }
    finally:
        started = time.perf_counter()
        # The store's own build, given the memory a million-vector graph needs (its default is 1 GB: at
        # 1M a build with 1 GB spilled to disk and had not finished after 12 minutes; 4 GB takes ~6).
        type(store)(metric=store.metric, maintenance_work_mem=MAINTENANCE_WORK_MEM).ensure_index()
        figures["hnsw_build_s"] = round(time.perf_counter() - started, 1)

    clock = UpsertClock()
    for start in range(incremental_start, size, CHUNKS_PER_DOCUMENT):
        clock.upsert(store, space.workspace.id, space.records(start, start + CHUNKS_PER_DOCUMENT), model_name)
    with raw_writer() as writer:
        raw_seconds, fresh_ids = 0.0, []
        try:
            for start in range(incremental_start, size, CHUNKS_PER_DOCUMENT):
                rows = writer.rows(space, start, start + CHUNKS_PER_DOCUMENT, model_name, fresh_ids=True)
                fresh_ids.extend(row[writer.id_column] for row in rows[0])
                raw_seconds += writer.copy(*rows)
        finally:
            writer.raw.rollback()
            writer.raw.execute("DELETE FROM retrieval_keywordposting WHERE chunk_id = ANY(%s)", [fresh_ids])
            writer.raw.execute("DELETE FROM sources_chunk WHERE id = ANY(%s)", [fresh_ids])
            writer.raw.commit()
    figures["incremental"] = {
        "chunks": size - incremental_start,
        "chunks_per_call": CHUNKS_PER_DOCUMENT,
        "store_upsert_chunks_per_s": round((size - incremental_start) / clock.elapsed),
        "raw_copy_chunks_per_s": round((size - incremental_start) / raw_seconds),
        "store_vs_raw_copy_time_ratio": round(clock.elapsed / raw_seconds, 2),
        "store_upsert_time_split": clock.split(),
    }

    started = time.perf_counter()
    with connection.cursor() as cursor:
        # The postings need a visibility map for index-only scans; the chunk table only needs statistics
        # (vacuuming an HNSW index means scanning all of it, minutes at a million vectors).
        cursor.execute("VACUUM ANALYZE retrieval_keywordposting")
        cursor.execute("ANALYZE sources_chunk")
        figures["vacuum_analyze_s"] = round(time.perf_counter() - started, 1)
        cursor.execute(
            "SELECT count(*) FROM retrieval_keywordposting WHERE workspace_id = %s", [space.workspace.id]
        )
        figures["postings"] = cursor.fetchone()[0]
        cursor.execute(
            "SELECT pg_size_pretty(pg_table_size('sources_chunk')),"
            " pg_size_pretty(pg_relation_size('chunk_embedding_hnsw')),"
            " pg_size_pretty(pg_relation_size('chunk_metadata_gin')),"
            " pg_size_pretty(pg_total_relation_size('retrieval_keywordposting'))"
        )
        names = ("chunk_table", "hnsw_index", "metadata_gin_index", "postings_with_indexes")
        figures["sizes"] = dict(zip(names, cursor.fetchone(), strict=True))
    return figures
