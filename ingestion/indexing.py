"""Turning documents into searchable chunks: chunk, embed in batches, store, and keep the status true."""

from __future__ import annotations

import logging
import traceback

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from config.logging import operator_detail
from ingestion.chunking import chunk_id, chunk_text
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


def source_index(*, source: Source) -> bool:
    """Index every pending document of a source. Returns False when another worker already claimed it."""
    with workspace_scope(source.workspace_id):
        claimed = Source.objects.filter(id=source.id, status=Status.PENDING).update(
            status=Status.INDEXING, error="", error_detail=""
        )
        if claimed != 1:
            return False
        for document in source.documents.filter(status__in=[Status.PENDING, Status.INDEXING]):
            document_index(document=document)
        source_refresh_status(source_id=source.id)
        return True


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
                    "agent_id": source.agent_id,
                    "document_id": document.id,
                    "chunk_id": str(cid),
                    "url": document.url,
                    "workspace_id": document.workspace_id,
                    "source_id": document.source_id,
                    "lang": document.language,
                    # Who may retrieve this chunk; visitors see "public" plus what their token grants.
                    "audience": source.config.get("audience") or ["public"],
                },
            )
        )
    return chunks


def _fail_document(document: Document, message: str, detail: str) -> None:
    Document.objects.filter(id=document.id).update(
        status=Status.FAILED, error=message[:500], error_detail=operator_detail(detail)
    )


def delete_source_chunks(*, source: Source) -> None:
    """Remove a source's chunks through the store first (vectors, keyword postings), then the rows."""
    with workspace_scope(source.workspace_id), transaction.atomic():
        chunk_ids = [str(i) for i in Chunk.objects.filter(source_id=source.id).values_list("id", flat=True)]
        delete_chunk_vectors(workspace_id=source.workspace_id, chunk_ids=chunk_ids)
        Chunk.objects.filter(source_id=source.id).delete()


def source_refresh_status(*, source_id: int) -> None:
    """Derive a source's counters and status from its documents (the single source of truth)."""
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
    if in_flight == 0:
        if counts["done"] == 0:
            first_error = (
                Document.objects.filter(source_id=source_id, status=Status.FAILED)
                .values("error", "error_detail")
                .first()
            )
            update.update(
                status=Status.FAILED,
                error=(first_error or {}).get("error") or "Nothing could be indexed.",
                error_detail=(first_error or {}).get("error_detail", ""),
            )
        else:
            update.update(status=Status.DONE, indexed_at=timezone.now(), error="", error_detail="")
    else:
        crawling = Document.objects.filter(
            source_id=source_id, status__in=[Status.PENDING, Status.CRAWLING]
        ).exists()
        kind = Source.objects.filter(id=source_id).values_list("kind", flat=True).first()
        fetching = kind is not None and get_kind(kind).fetches_pages
        update["status"] = Status.CRAWLING if crawling and fetching else Status.INDEXING
    Source.objects.filter(id=source_id).update(**update)
    source = Source.objects.filter(id=source_id).values("workspace_id", "agent_id").first()
    if source:
        semantic_cache.invalidate(workspace_id=source["workspace_id"], agent_id=source["agent_id"])
