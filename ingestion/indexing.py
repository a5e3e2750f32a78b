"""Turning documents into searchable chunks: chunk, embed in batches, store, and keep the status true."""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import partial
from itertools import chain
from typing import NamedTuple

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from config.logging import operator_detail
from ingestion import freshness, reuse, sentence_inputs
from ingestion.chunk_settings import chunking_of
from ingestion.chunking import chunk_id
from ingestion.failures import SKIP_LABELS, nothing_indexed
from ingestion.jobs import claims, lanes
from ingestion.jobs.store_behind import StoreBehind
from ingestion.kinds.registry import get_kind
from retrieval import cache as semantic_cache
from retrieval.embedders.base import Embedder, EmbeddingError
from retrieval.providers import embedder_for
from retrieval.stores.base import VectorStoreError
from retrieval.vectors import (
    Parts,
    delete_chunk_vectors,
    embed_parts,
    embedding_input,
    store_chunk_vectors,
)
from sources.models import ACTIVE_STATUSES, Chunk, Document, Source, Status
from sources.tenancy import current_workspace_id, workspace_scope

log = logging.getLogger(__name__)


class IndexingError(RuntimeError):
    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


# One index job embeds the chunks of many small documents together: the embedder's batches stay full and
# of similar length whatever the page sizes. The budget (~170 chunks of 2,000 characters, ~10 s of the
# built-in embedder on 2 cores) keeps one job well inside its time limit; settings of these names override it.
INDEX_BATCH_MAX_CHARS = 300_000
INDEX_BATCH_MAX_DOCUMENTS = 100
UNEXPECTED = "Something went wrong while indexing this page."
#: A document ready to embed: its chunks, their embedding inputs followed by their sentences' (when the
#: deployment makes sentence vectors), and where each chunk's sentences are among them (None until
#: _Waiting.add_sentences has cut them, or without sentence vectors).
Prepared = tuple[Document, list[Chunk], list[str], sentence_inputs.Layout | None]


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
        started = time.perf_counter()
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
        chunked = time.perf_counter()
        # One pass per embedder: an agent may embed with its own provider (retrieval.providers), and one
        # provider failing fails only its own documents.
        by_agent: dict[int, list[Prepared]] = {}
        for item in prepared:
            by_agent.setdefault(item[0].source.agent_id, []).append(item)
        # Embedded in parts, each document stored by another thread once its last chunk is embedded, while
        # the next part is embedded (store_behind.py).
        behind = StoreBehind()
        embedded_inputs = reused_inputs = 0
        segment_s = 0.0
        for agent_id, group in by_agent.items():
            embedder = embedder_for(agent_id)
            waiting = _Waiting(group, embedder, reuse.known_vectors([item[0] for item in group], embedder))
            made: list[Parts] = []
            try:
                # An embedder that works in the background (the built-in one's streams) is given the chunks'
                # own inputs first, and embeds them while this thread cuts their sentences (pysbd, ~20 ms a
                # page), which it used to wait for. Others, and chunks that fill one part (a lone part runs
                # when it is read, so nothing would overlap), go in one order by size with the sentences:
                # a provider gets one request fewer for a small page.
                early = embedder.embeds_in_background and waiting.uncut() > waiting.part_size
                parts = list(waiting.parts()) if early else []
                if parts:
                    made.append(embed_parts([[text for _, text in part] for part in parts], embedder))
                segmenting = time.perf_counter()
                waiting.add_sentences()
                segment_s += time.perf_counter() - segmenting
                reused_inputs += waiting.known
                # Documents whose every text was embedded before are stored before anything else.
                for item, item_vectors in waiting.whole():
                    behind.submit(partial(_store_document, *item, item_vectors, embedder, held_until))
                sentence_parts = list(waiting.parts())
                made.append(embed_parts([[text for _, text in part] for part in sentence_parts], embedder))
                for part, vectors in zip([*parts, *sentence_parts], chain(*made), strict=True):
                    for item, item_vectors in waiting.embedded(part, vectors):
                        behind.submit(partial(_store_document, *item, item_vectors, embedder, held_until))
                    embedded_inputs += len(vectors)
            except EmbeddingError as exc:
                # The provider failed: the documents not yet whole fail with the reason.
                for document, *_ in waiting.unfinished():
                    _fail_document(document, exc.message, exc.detail, held_until=held_until)
            finally:  # a failure leaves nothing queued on the embedder
                for queued in made:
                    queued.close()
        embedded = time.perf_counter()
        behind.wait()
        # Where an index job's time goes (the ingestion benchmark reads these lines from worker logs).
        log.info(
            "index timings %s",
            json.dumps(
                {
                    "documents": len(documents),
                    "chunks": sum(len(chunks) for _, chunks, _, _ in prepared),
                    # the chunks' and, with sentence vectors, their sentences'
                    "inputs": embedded_inputs,
                    # inputs whose vectors an earlier index of the same text left (reuse.py)
                    "reused": reused_inputs,
                    "chunk_s": round(chunked - started, 4),
                    # cutting sentences, while the embedder works on the chunks (part of embed_s)
                    "segment_s": round(segment_s, 4),
                    "embed_s": round(embedded - chunked, 4),
                    "store_s": round(time.perf_counter() - embedded, 4),
                }
            ),
        )


class _Waiting:
    """A job's documents waiting for their vectors. Their texts are embedded in parts of one batch of the
    embedder (a provider's: one request of EMBED_BATCH_SIZE), cut from one order by size (the embedder's
    tokens) across every document of the job, as one pass over all of them would be: parts cut document by
    document padded ~8 % more tokens on the Flask site (docs/BENCHMARKS.md). `parts()` cuts what is not
    cut yet: the chunks' inputs, then (once `add_sentences` has cut them) their sentences; or both in one
    order, when it is called after. Texts of one size go in document order."""

    def __init__(
        self, group: list[Prepared], embedder: Embedder, known: dict[int, dict[str, np.ndarray]]
    ) -> None:
        """`known`: by document id, vectors of texts embedded before (reuse.known_vectors)."""
        self._group = group
        self._embedder = embedder
        self._known = known
        self._vectors: list[list[np.ndarray | None]] = [[] for _ in group]
        self._missing = [0] * len(group)
        # Per document, how many of its inputs were known or cut into parts already.
        self._queued = [0] * len(group)
        self.known = 0
        for d, (_, _, inputs, _) in enumerate(group):
            self._extend(d, inputs)

    def _extend(self, d: int, texts: list[str]) -> None:
        known = self._known.get(self._group[d][0].id, {})
        vectors = [known.get(text) for text in texts]
        self._vectors[d] += vectors
        missing = sum(v is None for v in vectors)
        self._missing[d] += missing
        self.known += len(vectors) - missing

    def add_sentences(self) -> None:
        """Each document's sentences after its chunks' inputs (when the deployment makes sentence vectors)."""
        for d, (document, chunks, inputs, _) in enumerate(self._group):
            texts = [c.text for c in chunks]
            extended, layout = sentence_inputs.with_sentences(texts, inputs, document.title)
            self._group[d] = (document, chunks, extended, layout)
            self._extend(d, extended[len(inputs) :])

    def whole(self) -> Iterator[tuple[Prepared, np.ndarray]]:
        """The documents whose every vector was known before any was embedded."""
        for d, missing in enumerate(self._missing):
            if not missing:
                yield self._group[d], np.stack(self._vectors[d])

    @property
    def part_size(self) -> int:
        """Texts a part: one request of a provider, one batch of a built-in embedder."""
        size = max(1, settings.EMBED_BATCH_SIZE)
        return min(size, self._embedder.batch_size) if self._embedder.batch_size else size

    def _uncut(self) -> list[tuple[tuple[int, int], str]]:
        """The texts not cut into parts yet whose vectors are not known, by (document, row)."""
        return [
            ((d, c), inputs[c])
            for d, (_, _, inputs, _) in enumerate(self._group)
            for c in range(self._queued[d], len(inputs))
            if self._vectors[d][c] is None
        ]

    def uncut(self) -> int:
        """How many texts `parts()` would cut now."""
        return len(self._uncut())

    def parts(self) -> Iterator[list[tuple[tuple[int, int], str]]]:
        """The uncut texts, in parts."""
        texts = self._uncut()
        self._queued = [len(inputs) for _, _, inputs, _ in self._group]
        sizes = self._embedder.input_sizes([text for _, text in texts])
        # A stable sort: texts of one size stay in document order.
        order = sorted(range(len(texts)), key=sizes.__getitem__)
        # Small parts keep the job's tail short: what the last part makes whole is stored after it.
        size = self.part_size
        for start in range(0, len(order), size):
            yield [texts[n] for n in order[start : start + size]]

    def embedded(
        self, part: list[tuple[tuple[int, int], str]], vectors: np.ndarray
    ) -> Iterator[tuple[Prepared, np.ndarray]]:
        """Record a part's vectors; yields each document made whole by them, with all its vectors in order."""
        for ((d, c), _), vector in zip(part, vectors, strict=True):
            self._vectors[d][c] = vector
            self._missing[d] -= 1
            if self._missing[d] == 0:
                yield self._group[d], np.stack(self._vectors[d])

    def unfinished(self) -> list[Prepared]:
        return [item for item, missing in zip(self._group, self._missing, strict=True) if missing]


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


def source_refresh_status(*, source_id: int) -> None:
    """Derive a source's counters and status from its documents (the single source of truth). When nothing
    is in flight any more, its open sync ends first (ingestion.freshness.finish), removing condemned pages.

    Every crawled page and index job calls this, so it reads the documents in one aggregate and the source
    in one row: four statements where it took eight (docs/BENCHMARKS.md)."""
    counts = _document_counts(source_id)
    if counts["active"] == 0 and freshness.finish(source_id=source_id):
        counts = _document_counts(source_id)  # the sync's end removed the pages the evidence condemned
    fields = ("kind", "error", "status", "workspace_id", "agent_id")
    row = Source.objects.filter(id=source_id).values(*fields).first()
    if row is None:
        return
    kind = get_kind(row["kind"])
    update = {
        "pages_total": counts["total"],
        "pages_done": counts["done"],
        "pages_failed": counts["failed"],
        "pages_skipped": counts["skipped"],
        "pages_skipped_by_reason": {r: counts[f"skipped_{r}"] for r in SKIP_LABELS if counts[f"skipped_{r}"]},
        "chunks_count": Chunk.objects.filter(source_id=source_id).count(),
    }
    if counts["active"] == 0:
        # Skipped pages were left out on purpose: a source whose pages were all skipped has nothing that
        # failed (it is done, and says how many it skipped); only failures make it failed.
        if counts["done"] == 0 and (counts["failed"] or not counts["skipped"]):
            failed = list(
                Document.objects.filter(source_id=source_id, status=Status.FAILED)
                .order_by("id")
                .values_list("failure_class", "error", "error_detail")[:1000]
            )
            # A listing that failed already said why (row["error"]); pages that failed say it now.
            listing_error = row["error"] if row["status"] == Status.FAILED else ""
            error, detail = nothing_indexed(failed, listing_error, kind.unit[0], skipped=counts["skipped"])
            update.update(status=Status.FAILED, error=error[:500])
            if failed or not listing_error:
                update["error_detail"] = detail
        else:
            update.update(status=Status.DONE, indexed_at=timezone.now(), error="", error_detail="")
    else:
        fetching = counts["crawling"] > 0 and kind.fetches_pages
        update["status"] = Status.CRAWLING if fetching else Status.INDEXING
    update = kind.settle(source_id=source_id, update=update)
    Source.objects.filter(id=source_id).update(**update)
    semantic_cache.invalidate(workspace_id=row["workspace_id"], agent_id=row["agent_id"])


def _document_counts(source_id: int) -> dict[str, int]:
    """How many of the source's documents there are, done, failed, skipped (in all and by reason), in
    flight and not fetched yet."""
    skipped = Q(status=Status.SKIPPED)
    return Document.objects.filter(source_id=source_id).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=Status.DONE)),
        failed=Count("id", filter=Q(status=Status.FAILED)),
        skipped=Count("id", filter=skipped),
        **{f"skipped_{r}": Count("id", filter=skipped & Q(skip_reason=r)) for r in SKIP_LABELS},
        active=Count("id", filter=Q(status__in=ACTIVE_STATUSES)),
        crawling=Count("id", filter=Q(status__in=[Status.PENDING, Status.CRAWLING])),
    )
