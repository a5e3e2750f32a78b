"""Turning documents into searchable chunks: chunk, embed in batches (cut by ingestion/embedding_plan.py) and
store; the source's status is then derived from its documents (ingestion/status.py)."""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from itertools import chain
from typing import NamedTuple

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction

from config.logging import operator_detail
from ingestion import reuse
from ingestion.chunk_settings import chunking_of
from ingestion.embedding_plan import Prepared, Waiting
from ingestion.jobs import claims, lanes
from ingestion.jobs.store_behind import StoreBehind
from ingestion.status import source_refresh_status
from ingestion.text import sentence_inputs
from ingestion.text.chunking import chunk_id
from retrieval.embedders.base import Embedder, EmbeddingError
from retrieval.providers import embedder_for
from retrieval.stores.base import VectorStoreError
from retrieval.vectors import Parts, delete_chunk_vectors, embed_parts, embedding_input, store_chunk_vectors
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import current_workspace_id, workspace_scope

log = logging.getLogger(__name__)


class IndexingError(RuntimeError):
    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


# One index job embeds the chunks of many small documents together: the embedder's batches stay full and
# of similar length whatever the page sizes. The budget (~170 chunks of 2,000 characters, a small share
# of the time limit for the built-in embedder on 2 cores) keeps one job well inside that limit; settings of
# these names override it.
INDEX_BATCH_MAX_CHARS = 300_000
INDEX_BATCH_MAX_DOCUMENTS = 100
UNEXPECTED = "Something went wrong while indexing this page."


def batch_budget() -> tuple[int, int]:
    return (
        getattr(settings, "INDEX_BATCH_MAX_CHARS", INDEX_BATCH_MAX_CHARS),
        getattr(settings, "INDEX_BATCH_MAX_DOCUMENTS", INDEX_BATCH_MAX_DOCUMENTS),
    )


def source_index(*, source: Source, inline_up_to: int | None = None) -> list[int]:
    """Claim a pending source and index its pending documents in this process, or, when there are more than
    `inline_up_to` of them, return their ids for one job each (so no single task outlives its time limit).
    Returns [] when everything was done here or another worker already claimed the source."""
    with workspace_scope(source.workspace_id):
        if not claims.claim_pending_source(source=source, to=Status.INDEXING):
            return []
        pending = source.documents.filter(status__in=[Status.PENDING, Status.INDEXING])
        if inline_up_to is not None and pending.count() > inline_up_to:
            return list(pending.order_by("id").values_list("id", flat=True))
        for batch in in_batches(pending.order_by("id")):
            documents_index(documents=batch)
        source_refresh_status(source_id=source.id)
        return []


def in_batches(documents: Iterable[Document]) -> Iterator[list[Document]]:
    """The documents in groups of an index job's budget (batch_budget), in their order: a group ends once
    it holds the budget's characters or documents."""
    max_chars, max_documents = batch_budget()
    batch: list[Document] = []
    size = 0
    for document in documents:
        batch.append(document)
        size += len(document.text)
        if size >= max_chars or len(batch) >= max_documents:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def source_timed_out(*, source: Source) -> None:
    """The index job of a whole source ran out of time: what it had not finished fails, with the reason."""
    with workspace_scope(source.workspace_id):
        Document.objects.filter(source_id=source.id, status__in=[Status.PENDING, Status.INDEXING]).update(
            status=Status.FAILED,
            error="Indexing this page took too long; try Reindex.",
            error_detail=f"soft time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT}s",
            due_by=None,
        )
        source_refresh_status(source_id=source.id)


def document_timed_out(*, document: Document) -> None:
    """The index job's time limit ran out (an embedder that hangs, a huge page): fail this page only."""
    with workspace_scope(document.workspace_id):
        _fail_document(
            document,
            "Indexing this page took too long; try Reindex.",
            f"soft time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT}s",
        )


class IndexPass(NamedTuple):
    sources: list[int]  # the sources touched, whose status is derived again
    more: int | None = None  # a document the budget left waiting, for the next job


def index_ready(*, workspace_id: int, document_id: int) -> IndexPass:
    """The index queue's job for one document: claim it together with the workspace's other pages that wait
    to be indexed (crawled, their own jobs still queued, queued in batches, or held by a job that died), up
    to a budget, and index them in one pass. The jobs of the companions then find nothing to claim."""
    with workspace_scope(workspace_id):
        max_chars, max_documents = batch_budget()
        # A job in the interactive lane stays short: no companions from the workspace's big crawl.
        documents, held_until, more = claims.claim_ready(
            document_id,
            max_chars=max_chars,
            max_documents=max_documents,
            companions_of=_interactive_source(document_id),
        )
        if not documents:
            return IndexPass([])
        try:
            documents_index(documents=documents, held_until=held_until)
        except SoftTimeLimitExceeded:
            for document in documents:
                Document.objects.filter(claims.held(document.id, held_until)).update(
                    status=Status.FAILED,
                    error="Indexing this page took too long; try Reindex.",
                    error_detail=f"soft time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT}s",
                    failure_class="indexing",
                    due_by=None,
                )
        return IndexPass(sorted({d.source_id for d in documents}), more)


def _interactive_source(document_id: int) -> int | None:
    """The document's source when its jobs take the interactive lane (ingestion/jobs/lanes.py)."""
    source_id = Document.objects.filter(id=document_id).values_list("source_id", flat=True).first()
    if source_id is None:
        return None
    lane = lanes.lane_for_source_id(current_workspace_id(), source_id)
    return source_id if lane.name == "interactive" else None


def document_index(*, document: Document) -> None:
    """Chunk, embed and store one document, replacing its previous chunks in one transaction."""
    documents_index(documents=[document])


def documents_index(*, documents: list[Document], held_until: datetime | None = None) -> None:
    """Chunk the documents, embed all their chunks in one pass (batched by length across documents), then
    store each document in its own transaction: its previous chunks are replaced at once, and one failing
    document fails alone. `held_until` is the token of the claim that holds them (ingestion/jobs/claims.py);
    without one, they are held here. A document whose hold was taken over meanwhile is left to its new
    holder: nothing is written for it."""
    if not documents:
        return
    with workspace_scope(documents[0].workspace_id):
        if held_until is None:
            held, held_until = claims.hold_documents([d.id for d in documents])
            # Read again once held: the text indexed is the one on the row now (a newer pushed version may
            # have replaced it since it was read), and a document another job holds is left to that job.
            documents = list(Document.objects.filter(id__in=held).select_related("source").order_by("id"))
            if not documents:
                return  # all held by other jobs, or deleted with their source
        timings = _Timings(started=time.perf_counter())
        prepared = _chunk_documents(documents, held_until)
        timings.chunked = time.perf_counter()
        # One pass per embedder: an agent may embed with its own provider (retrieval.providers), and one
        # provider failing fails only its own documents.
        by_agent: dict[int, list[Prepared]] = {}
        for item in prepared:
            by_agent.setdefault(item[0].source.agent_id, []).append(item)
        # Embedded in parts, each document stored by another thread once its last chunk is embedded, while
        # the next part is embedded (store_behind.py).
        behind = StoreBehind()
        for agent_id, group in by_agent.items():
            _embed_and_store(group, embedder_for(agent_id), behind, held_until, timings)
        timings.embedded = time.perf_counter()
        behind.wait()
        timings.log(documents, prepared)


def _chunk_documents(documents: list[Document], held_until: datetime) -> list[Prepared]:
    """Each document's chunks and their embedding inputs; a document that can't be chunked fails alone."""
    prepared: list[Prepared] = []
    for document in documents:
        try:
            chunks = _build_chunks(document)
        except IndexingError as exc:
            _fail_document(document, exc.message, exc.detail, held_until=held_until)
            continue
        except SoftTimeLimitExceeded:
            raise
        except Exception:
            log.exception("chunking document %s failed", document.id)
            _fail_document(document, UNEXPECTED, traceback.format_exc(), held_until=held_until)
            continue
        inputs = [embedding_input(c.text, document.title) for c in chunks]
        prepared.append((document, chunks, inputs, None))
    return prepared


def _embed_and_store(
    group: list[Prepared], embedder: Embedder, behind: StoreBehind, held_until: datetime, timings: _Timings
) -> None:
    """Embed one embedder's documents (their chunks, then their sentences) and hand each to `behind` to be
    stored once its last vector is made."""
    waiting = Waiting(group, embedder, reuse.known_vectors([item[0] for item in group], embedder))
    made: list[Parts] = []
    try:
        # An embedder that works in the background (the built-in one's streams) is given the chunks'
        # own inputs first, and embeds them while this thread cuts their sentences (pysbd, not free
        # per page: docs/BENCHMARKS.md), which it used to wait for. Others, and chunks that fill one
        # part (a lone part runs when it is read, so nothing would overlap), go in one order by size with
        # the sentences: a provider gets one request fewer for a small page.
        early = embedder.embeds_in_background and waiting.uncut() > waiting.part_size
        parts = list(waiting.parts()) if early else []
        if parts:
            made.append(embed_parts([[text for _, text in part] for part in parts], embedder))
        segmenting = time.perf_counter()
        waiting.add_sentences()
        timings.segment_s += time.perf_counter() - segmenting
        timings.reused_inputs += waiting.known
        # Documents whose every text was embedded before are stored before anything else.
        for item, item_vectors in waiting.whole():
            behind.submit(partial(_store_document, *item, item_vectors, embedder, held_until))
        sentence_parts = list(waiting.parts())
        made.append(embed_parts([[text for _, text in part] for part in sentence_parts], embedder))
        for part, vectors in zip([*parts, *sentence_parts], chain(*made), strict=True):
            for item, item_vectors in waiting.embedded(part, vectors):
                behind.submit(partial(_store_document, *item, item_vectors, embedder, held_until))
            timings.embedded_inputs += len(vectors)
    except EmbeddingError as exc:
        # The provider failed: the documents not yet whole fail with the reason.
        for document, *_ in waiting.unfinished():
            _fail_document(document, exc.message, exc.detail, held_until=held_until)
    finally:  # a failure leaves nothing queued on the embedder
        for queued in made:
            queued.close()


@dataclass
class _Timings:
    """Where an index job's time goes (the ingestion benchmark reads these lines from worker logs)."""

    started: float
    chunked: float = 0.0
    embedded: float = 0.0
    segment_s: float = 0.0
    embedded_inputs: int = 0
    reused_inputs: int = 0

    def log(self, documents: list[Document], prepared: list[Prepared]) -> None:
        log.info(
            "index timings %s",
            json.dumps(
                {
                    "documents": len(documents),
                    "chunks": sum(len(chunks) for _, chunks, _, _ in prepared),
                    # the chunks' and, with sentence vectors, their sentences'
                    "inputs": self.embedded_inputs,
                    # inputs whose vectors an earlier index of the same text left (reuse.py)
                    "reused": self.reused_inputs,
                    "chunk_s": round(self.chunked - self.started, 4),
                    # cutting sentences, while the embedder works on the chunks (part of embed_s)
                    "segment_s": round(self.segment_s, 4),
                    "embed_s": round(self.embedded - self.chunked, 4),
                    "store_s": round(time.perf_counter() - self.embedded, 4),
                }
            ),
        )


def _store_document(
    document: Document,
    chunks: list[Chunk],
    inputs: list[str],
    layout: sentence_inputs.Layout | None,
    vectors: np.ndarray,
    embedder: Embedder,
    held_until: datetime,
) -> None:
    reuse.mark(chunks, inputs, layout)
    vectors, inputs = sentence_inputs.attach(chunks, vectors, layout), inputs[: len(chunks)]
    try:
        with transaction.atomic():
            if not claims.still_held(document.id, held_until):
                # A newer version released our hold, or it passed and the document went to another job
                # (the sweeper judged us dead), or the document was deleted: its holder, if any, writes
                # it, so this late copy neither duplicates nor overwrites anything.
                log.info("document %s: no longer held by this job; nothing stored", document.id)
                return
            old_ids = [str(i) for i in document.chunks.values_list("id", flat=True)]
            # Through the store first, so its keyword statistics stay in step, then the rows.
            delete_chunk_vectors(workspace_id=document.workspace_id, chunk_ids=old_ids)
            Chunk.objects.filter(document=document).delete()
            Chunk.objects.bulk_create(chunks)
            store_chunk_vectors(
                workspace_id=document.workspace_id,
                chunks=chunks,
                inputs=inputs,
                vectors=vectors,
                embedder=embedder,
            )
            Document.objects.filter(id=document.id).update(
                status=Status.DONE, error="", error_detail="", due_by=None
            )
    except (EmbeddingError, IndexingError) as exc:
        _fail_document(document, exc.message, exc.detail, held_until=held_until)
    except VectorStoreError as exc:
        _fail_document(
            document, "The search index is unavailable; we'll need to retry.", str(exc), held_until=held_until
        )
    except SoftTimeLimitExceeded:
        raise  # the task's time limit: the task decides what a timeout means
    except Exception:
        # Unexpected: keep the trace for operators and fail this document only, so its source
        # still reaches a final status instead of hanging in "indexing".
        log.exception("indexing document %s failed", document.id)
        _fail_document(document, UNEXPECTED, traceback.format_exc(), held_until=held_until)


def _build_chunks(document: Document) -> list[Chunk]:
    source = document.source
    # The source's own chunking, else the deployment's (the preview reads the same function).
    pieces = chunking_of(source).chunks(document.text)
    if not pieces:
        raise IndexingError("This document has no text to index.")
    chunks = []
    for piece in pieces:
        cid = chunk_id(document.id, piece.position, piece.text)
        chunks.append(
            Chunk(
                id=cid,
                workspace_id=document.workspace_id,
                document=document,
                source_id=document.source_id,
                position=piece.position,
                text=piece.text,
                metadata={
                    # The source's metadata (ingestion/labels.py), then who may retrieve this chunk: visitors
                    # see "public" plus what their token grants.
                    **(source.config.get("metadata") or {}),
                    "audience": source.config.get("audience") or ["public"],
                    # A document's own keys (a pushed document's metadata and audience) come next, and the
                    # keys we set last, so no document can claim another agent or workspace.
                    **document.metadata,
                    "agent_id": source.agent_id,
                    "document_id": document.id,
                    "chunk_id": str(cid),
                    "url": document.url,
                    "workspace_id": document.workspace_id,
                    "source_id": document.source_id,
                    "lang": (source.config.get("metadata") or {}).get("lang") or document.language,
                },
            )
        )
    return chunks


def _fail_document(
    document: Document, message: str, detail: str, *, held_until: datetime | None = None
) -> None:
    # A holder fails a document only while it still holds it (see _store_document).
    Document.objects.filter(claims.held(document.id, held_until)).update(
        status=Status.FAILED,
        error=message[:500],
        error_detail=operator_detail(detail),
        failure_class="indexing",
        due_by=None,
    )


def delete_source_chunks(*, source: Source) -> None:
    """Remove a source's chunks through the store first (vectors, keyword postings), then the rows."""
    with workspace_scope(source.workspace_id), transaction.atomic():
        chunk_ids = [str(i) for i in Chunk.objects.filter(source_id=source.id).values_list("id", flat=True)]
        delete_chunk_vectors(workspace_id=source.workspace_id, chunk_ids=chunk_ids)
        Chunk.objects.filter(source_id=source.id).delete()
