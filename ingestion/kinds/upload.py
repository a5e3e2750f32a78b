"""Uploaded files: parsed once in an isolated process into segments, kept in storage (ingestion/files.py),
and indexed from those segments, so a reindex never needs the file again.

Sources of this kind are made from files (ingestion.lifecycle.upload_create), not from a JSON payload.
Source.config keeps what the uploader gave (the file's name); Source.state what we found out (size, where
the original is stored, its hash, whether it was parsed, a chunk separator for spreadsheet rows).
"""

from __future__ import annotations

import hashlib
import logging
import traceback
from collections.abc import Iterable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction

from ingestion.files import UploadMissing, load_segments, parse_original, save_segments
from ingestion.indexing import delete_source_chunks, document_index
from ingestion.jobs.claims import claim_pending_source
from ingestion.jobs.progress import Progress
from ingestion.kinds.base import SourceKind
from ingestion.kinds.config import KindConfig, KindError
from ingestion.parsers.base import ParseError, Segment
from ingestion.status import source_refresh_status
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

ROW_SEPARATOR = "\n"
REUPLOAD_NEEDED = "The extracted text of this file is missing, so it can't be reindexed: re-upload needed."


def human_size(n: int) -> str:
    """Sizes as people read them: 900 KB, 25 MB (binary units, as the limits are set)."""
    if n < 1024 * 1024:
        return f"{max(n / 1024, 0.1):.0f} KB" if n >= 1024 else f"{n} bytes"
    return f"{n / 1024 / 1024:.1f}".rstrip("0").rstrip(".") + " MB"


class UploadTooLarge(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_upload_size(upload: Any) -> None:
    """The per-file limits, checked before anything is stored."""
    limit = settings.UPLOAD_MAX_FILE_BYTES
    if upload.size > limit:
        raise UploadTooLarge(
            f"{upload.name} is {human_size(upload.size)}; the limit per file is {human_size(limit)}."
        )
    if upload.size == 0:
        raise KindError({"file": [f"{upload.name} is empty."]})


def upload_filename(upload: Any) -> str:
    """The file's own name, never a path: it is shown to people, not used to store the file."""
    return (upload.name or "file").replace("\\", "/").rsplit("/", 1)[-1][:200]


class UploadConfig(KindConfig):
    filename: str


class UploadKind(SourceKind):
    name = "upload"
    label = "File"
    icon = "file"
    unit = ("section", "sections")
    config_model = UploadConfig
    add_label = "Files"
    add_help = "Each file becomes a source."  # the dialog adds the accepted types and limits
    form_fields = ("file",)
    ingest_task = "index_upload"
    reindex_task = "index_upload"

    def validate(self, payload: dict[str, Any]) -> KindConfig:
        raise KindError({"file": ["Files are uploaded as multipart form data, one `file` field per file."]})

    def address(self, source: Source) -> str:
        return str(source.config.get("filename", ""))

    def prepare_reindex(self, *, source: Source) -> None:
        pass  # the documents are made again from the kept segments

    def index(self, *, source: Source, inline: bool = False) -> list[int]:
        upload_index(source=source)  # parsed and indexed in its task, which has the parser's time limit
        return []


def upload_index(*, source: Source) -> None:
    """Parse (first time) or reload segments (reindex), then index every document."""
    with workspace_scope(source.workspace_id):
        if not claim_pending_source(source=source, to=Status.INDEXING):
            return
        progress = Progress(source.id)
        progress.clear()  # a previous run's stage is not this one's
        try:
            if source.state.get("parsed"):
                segments = load_segments(source)
            else:
                segments = parse_original(source, on_progress=progress.reported)
                save_segments(source, segments)
                state = {**source.state, "parsed": True, "segments": len(segments)}
                if segments and all("row" in segment.meta for segment in segments):
                    # Spreadsheet rows are records: chunks pack whole rows and never split one.
                    state["chunk_separator"] = ROW_SEPARATOR
                Source.objects.filter(id=source.id).update(state=state)
                source.state = state
        except UploadMissing as exc:
            _fail(source, REUPLOAD_NEEDED, str(exc), reupload=True)
            return
        except ParseError as exc:
            # Reading the same file again would fail the same way: only a new version helps.
            _fail(source, exc.message, f"{exc.reason}: {exc.detail}", new_file=True)
            return
        except SoftTimeLimitExceeded:
            raise  # the task's time limit: the task decides what a timeout means
        except Exception:
            # Unexpected: fail the source with the trace for operators rather than leave it indexing.
            log.exception("parsing upload %s failed", source.id)
            _fail(source, "Something went wrong while reading this file.", traceback.format_exc())
            return
        documents = documents_from_segments(source, segments)
        if not documents:
            _fail(source, "We found no text in this file.", "every segment was empty", new_file=True)
            return
        for number, document in enumerate(documents, start=1):
            progress("embedding", number, len(documents))
            document_index(document=document)
        source_refresh_status(source_id=source.id)


def documents_from_segments(source: Source, segments: Iterable[Segment]) -> list[Document]:
    """Replace the source's documents: consecutive segments with the same title make one document
    (all rows of one sheet, all pages of one section), so citations name the part of the file."""
    filename = source.config.get("filename") or source.title
    groups: list[tuple[str, list[str]]] = []
    for segment in segments:
        if not segment.text.strip():
            continue
        if groups and groups[-1][0] == segment.title:
            groups[-1][1].append(segment.text)
        else:
            groups.append((segment.title, [segment.text]))
    joiner = source.state.get("chunk_separator") or "\n\n"
    with workspace_scope(source.workspace_id), transaction.atomic():
        delete_source_chunks(source=source)
        source.documents.all().delete()
        documents = [
            Document(
                workspace_id=source.workspace_id,
                source=source,
                title=(f"{filename} — {title}" if title and title != filename else filename)[:500],
                text=joiner.join(texts),
                content_hash=hashlib.sha256(joiner.join(texts).encode()).hexdigest(),
                status=Status.PENDING,
            )
            for title, texts in groups
        ]
        return Document.objects.bulk_create(documents)


def _fail(source: Source, message: str, detail: str, reupload: bool = False, new_file: bool = False) -> None:
    state = {**source.state, "reupload_needed": reupload, "new_file_needed": new_file}
    state.pop("progress", None)
    Source.objects.filter(id=source.id).update(
        status=Status.FAILED, error=message[:500], error_detail=detail, state=state
    )
