"""Turning documents into searchable chunks: chunk, embed in batches, store, and keep the status true."""

from __future__ import annotations

import logging
import traceback

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from ingestion.chunking import chunk_id, chunk_text
from ingestion.failures import nothing_indexed
from ingestion.kinds.registry import get_kind
from retrieval import cache as semantic_cache
from retrieval.embedders.base import EmbeddingError
from retrieval.services import delete_chunk_vectors, store_chunk_vectors
from retrieval.stores.base import VectorStoreError
from sources.models import Chunk, Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)


class IndexingError(RuntimeError):
    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


def source_index(*, source: Source, inline_up_to: int | None = None) -> list[int]:
    """Claim a pending source and index its pending documents in this process, or, when there are more than
    `inline_up_to` of them, return their ids for one job each (so no single task outlives its time limit).
    Returns [] when everything was done here or another worker already claimed the source."""
    with workspace_scope(source.workspace_id):
        claimed = Source.objects.filter(id=source.id, status=Status.PENDING).update(
            status=Status.INDEXING,
            error="",
            error_detail="",
            updated_at=timezone.now(),  # the sweeper reads it
        )
        if claimed != 1:
            return []
        pending = source.documents.filter(status__in=[Status.PENDING, Status.INDEXING])
        if inline_up_to is not None and pending.count() > inline_up_to:
            return list(pending.order_by("id").values_list("id", flat=True))
        for document in pending:
            document_index(document=document)
        source_refresh_status(source_id=source.id)
        return []


def source_timed_out(*, source: Source) -> None:
    """The index job of a whole source ran out of time: what it had not finished fails, with the reason."""
    with workspace_scope(source.workspace_id):
        Document.objects.filter(source_id=source.id, status__in=[Status.PENDING, Status.INDEXING]).update(
            status=Status.FAILED,
            error="Indexing this page took too long; try Reindex.",
            error_detail=f"soft time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT}s",
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


def document_index(*, document: Document) -> None:
    """Chunk, embed and store one document, replacing its previous chunks in one transaction."""
    with workspace_scope(document.workspace_id):
        Document.objects.filter(id=document.id).update(status=Status.INDEXING)
        try:
            chunks = _build_chunks(document)
            old_ids = [str(i) for i in document.chunks.values_list("id", flat=True)]
            with transaction.atomic():
                # Through the store first, so its keyword statistics stay in step, then the rows.
                delete_chunk_vectors(workspace_id=document.workspace_id, chunk_ids=old_ids)
                Chunk.objects.filter(document=document).delete()
                Chunk.objects.bulk_create(chunks)
                store_chunk_vectors(workspace_id=document.workspace_id, chunks=chunks, title=document.title)
                Document.objects.filter(id=document.id).update(status=Status.DONE, error="", error_detail="")
        except (EmbeddingError, IndexingError) as exc:
            _fail_document(document, exc.message, exc.detail)
        except VectorStoreError as exc:
            _fail_document(document, "The search index is unavailable; we'll need to retry.", str(exc))
        except SoftTimeLimitExceeded:
            raise  # the task's time limit: the task decides what a timeout means
        except Exception:
            # Unexpected: keep the trace for operators and fail this document only, so its source
            # still reaches a final status instead of hanging in "indexing".
            log.exception("indexing document %s failed", document.id)
            _fail_document(document, "Something went wrong while indexing this page.", traceback.format_exc())


def _build_chunks(document: Document) -> list[Chunk]:
    source = document.source
    pieces = chunk_text(
        document.text,
        target_chars=settings.CHUNK_TARGET_CHARS,
        overlap_chars=settings.CHUNK_OVERLAP_CHARS,
        separator=source.state.get("chunk_separator") or source.config.get("chunk_separator"),
    )
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
                    # Who may retrieve this chunk; visitors see "public" plus what their token grants.
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
                    "lang": document.language,
                },
            )
        )
    return chunks


def _fail_document(document: Document, message: str, detail: str) -> None:
    Document.objects.filter(id=document.id).update(
        status=Status.FAILED, error=message[:500], error_detail=detail, failure_class="indexing"
    )


def delete_source_chunks(*, source: Source) -> None:
    """Remove a source's chunks through the store first (vectors, keyword postings), then the rows."""
    with workspace_scope(source.workspace_id), transaction.atomic():
        chunk_ids = [str(i) for i in Chunk.objects.filter(source_id=source.id).values_list("id", flat=True)]
        delete_chunk_vectors(workspace_id=source.workspace_id, chunk_ids=chunk_ids)
        Chunk.objects.filter(source_id=source.id).delete()


def source_refresh_status(*, source_id: int) -> None:
    """Derive a source's counters and status from its documents (the single source of truth). When nothing
    is in flight any more, its open sync ends first (ingestion.sync.finish), removing condemned pages."""
    from ingestion import sync

    active = [Status.PENDING, Status.CRAWLING, Status.INDEXING]
    if not Document.objects.filter(source_id=source_id, status__in=active).exists():
        sync.finish(source_id=source_id)
    counts = Document.objects.filter(source_id=source_id).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=Status.DONE)),
        failed=Count("id", filter=Q(status=Status.FAILED)),
    )
    chunks = Chunk.objects.filter(source_id=source_id).count()
    update = {
        "pages_total": counts["total"],
        "pages_done": counts["done"],
        "pages_failed": counts["failed"],
        "chunks_count": chunks,
    }
    in_flight = counts["total"] - counts["done"] - counts["failed"]
    row = Source.objects.filter(id=source_id).values("kind", "error", "status").first()
    kind = get_kind(row["kind"]) if row else None
    if in_flight == 0:
        if counts["done"] == 0:
            failed = list(
                Document.objects.filter(source_id=source_id, status=Status.FAILED)
                .order_by("id")
                .values_list("failure_class", "error", "error_detail")[:1000]
            )
            # A listing that failed already said why (row["error"]); pages that failed say it now.
            listing_error = row["error"] if row and row["status"] == Status.FAILED else ""
            error, detail = nothing_indexed(failed, listing_error, kind.unit[0] if kind else "page")
            update.update(status=Status.FAILED, error=error[:500])
            if failed or not listing_error:
                update["error_detail"] = detail
        else:
            update.update(status=Status.DONE, indexed_at=timezone.now(), error="", error_detail="")
    else:
        crawling = Document.objects.filter(
            source_id=source_id, status__in=[Status.PENDING, Status.CRAWLING]
        ).exists()
        fetching = kind is not None and kind.fetches_pages
        update["status"] = Status.CRAWLING if crawling and fetching else Status.INDEXING
    kind_name = Source.objects.filter(id=source_id).values_list("kind", flat=True).first()
    if kind_name is not None:
        update = get_kind(kind_name).settle(source_id=source_id, update=update)
    Source.objects.filter(id=source_id).update(**update)
    source = Source.objects.filter(id=source_id).values("workspace_id", "agent_id").first()
    if source:
        semantic_cache.invalidate(workspace_id=source["workspace_id"], agent_id=source["agent_id"])
