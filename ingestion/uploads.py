"""Uploaded files: keep the original, parse it safely, keep its text as segments, index from them.

Storage layout (Django's default storage: MEDIA_ROOT locally, S3-compatible through django-storages):
    uploads/{workspace_id}/{source_id}/original{.ext}
    uploads/{workspace_id}/{source_id}/segment-{n}.txt      the extracted text, one file per segment
    uploads/{workspace_id}/{source_id}/segments.json        titles and order of the segments
Reindexing reads the segments back, so it never needs the file again. Names never come from the
uploader: the original filename is kept only as data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import tempfile
import traceback
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import default_storage
from django.db import transaction

from ingestion.parsers.base import ParseError, Segment
from sources.models import Document, Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

ROW_SEPARATOR = "\n"
REUPLOAD_NEEDED = "The extracted text of this file is missing, so it can't be reindexed: re-upload needed."


class UploadMissing(RuntimeError):
    pass


def folder(source: Source) -> str:
    return f"uploads/{int(source.workspace_id)}/{int(source.id)}"


def safe_extension(filename: str) -> str:
    suffix = Path(filename.replace("\\", "/")).suffix.lower()
    return suffix if re.fullmatch(r"\.[a-z0-9]{1,8}", suffix) else ""


def store_original(source: Source, upload: File) -> tuple[str, str]:
    """Save the uploaded file; returns (storage path, sha256)."""
    digest = hashlib.sha256()
    for piece in upload.chunks():
        digest.update(piece)
    upload.seek(0)
    name = f"{folder(source)}/original{safe_extension(source.config.get('filename', ''))}"
    saved = default_storage.save(name, upload)
    return saved, digest.hexdigest()


def parse_original(source: Source) -> list[Segment]:
    """Parse the stored original in an isolated child process (time and memory limits)."""
    from ingestion.parsers.isolation import parse_file_isolated

    path = source.config.get("storage_path", "")
    if not path or not default_storage.exists(path):
        raise UploadMissing("The uploaded file is missing from storage.")
    with tempfile.TemporaryDirectory() as workdir:
        local = Path(workdir) / f"upload{safe_extension(source.config.get('filename', ''))}"
        with default_storage.open(path, "rb") as stored, local.open("wb") as out:
            shutil.copyfileobj(stored, out)
        return parse_file_isolated(
            local,
            source.config.get("filename", local.name),
            timeout_s=settings.UPLOAD_PARSE_TIMEOUT,
            memory_mb=settings.UPLOAD_PARSE_MEMORY_MB,
        )


def save_segments(source: Source, segments: list[Segment]) -> None:
    base = folder(source)
    delete_segments(source)
    manifest = []
    for n, segment in enumerate(segments):
        default_storage.save(f"{base}/segment-{n}.txt", ContentFile(segment.text.encode()))
        manifest.append({"n": n, "title": segment.title})
    default_storage.save(f"{base}/segments.json", ContentFile(json.dumps(manifest).encode()))


def load_segments(source: Source) -> list[Segment]:
    base = folder(source)
    try:
        with default_storage.open(f"{base}/segments.json", "rb") as f:
            manifest = json.load(f)
        segments = []
        for entry in manifest:
            with default_storage.open(f"{base}/segment-{int(entry['n'])}.txt", "rb") as f:
                segments.append(Segment(f.read().decode(), entry.get("title", "")))
    except (FileNotFoundError, OSError, ValueError, KeyError) as exc:
        raise UploadMissing(str(exc)) from exc
    return segments


def delete_segments(source: Source) -> None:
    base = folder(source)
    _, files = _listdir(base)
    for name in files:
        if name.startswith("segment"):
            default_storage.delete(f"{base}/{name}")


def delete_files(workspace_id: int, source_id: int) -> None:
    """Remove everything stored for a source (called after its rows are deleted)."""
    base = f"uploads/{int(workspace_id)}/{int(source_id)}"
    _, files = _listdir(base)
    for name in files:
        default_storage.delete(f"{base}/{name}")
    try:
        local = default_storage.path(base)
    except NotImplementedError:
        return  # object storage (S3) has no folders to remove once the files are gone
    shutil.rmtree(local, ignore_errors=True)


def _listdir(base: str) -> tuple[list[str], list[str]]:
    try:
        return default_storage.listdir(base)
    except (FileNotFoundError, OSError):
        return [], []


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
    joiner = source.config.get("chunk_separator") or "\n\n"
    with workspace_scope(source.workspace_id), transaction.atomic():
        from ingestion.services import delete_source_chunks

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


def upload_index(*, source: Source) -> None:
    """Parse (first time) or reload segments (reindex), then index every document."""
    from ingestion.services import document_index, source_refresh_status

    with workspace_scope(source.workspace_id):
        claimed = Source.objects.filter(id=source.id, status=Status.PENDING).update(
            status=Status.INDEXING, error="", error_detail=""
        )
        if claimed != 1:
            return
        try:
            if source.config.get("parsed"):
                segments = load_segments(source)
            else:
                segments = parse_original(source)
                save_segments(source, segments)
                config = {**source.config, "parsed": True, "segments": len(segments)}
                if segments and all("row" in segment.meta for segment in segments):
                    # Spreadsheet rows are records: chunks pack whole rows and never split one.
                    config["chunk_separator"] = ROW_SEPARATOR
                Source.objects.filter(id=source.id).update(config=config)
                source.config = config
        except UploadMissing as exc:
            _fail(source, REUPLOAD_NEEDED, str(exc), reupload=True)
            return
        except ParseError as exc:
            _fail(source, exc.message, f"{exc.reason}: {exc.detail}")
            return
        except Exception:
            # Unexpected: fail the source with the trace for operators rather than leave it indexing.
            log.exception("parsing upload %s failed", source.id)
            _fail(source, "Something went wrong while reading this file.", traceback.format_exc())
            return
        documents = documents_from_segments(source, segments)
        if not documents:
            _fail(source, "We found no text in this file.", "every segment was empty")
            return
        for document in documents:
            document_index(document=document)
        source_refresh_status(source_id=source.id)


def _fail(source: Source, message: str, detail: str, reupload: bool = False) -> None:
    config = {**source.config, "reupload_needed": reupload}
    Source.objects.filter(id=source.id).update(
        status=Status.FAILED, error=message[:500], error_detail=detail, config=config
    )
