"""Uploaded files in storage: the original, and its text as segments (so reindexing never needs the file).

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
import mimetypes
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import default_storage

from ingestion.crawl.base import FetchedPage
from ingestion.crawl.extract import ExtractedPage
from ingestion.parsers.base import ParseError, Segment
from sources.models import Source


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


def parse_original(source: Source, *, on_progress: Callable[[dict], None] | None = None) -> list[Segment]:
    """Parse the stored original in an isolated child process (time and memory limits); `on_progress`
    hears where the parser has got to (ingestion.parsers.base.report_progress)."""
    from ingestion.parsers.isolation import parse_file_isolated

    path = source.state.get("storage_path", "")
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
            on_progress=on_progress,
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


def parse_fetched_file(page: FetchedPage) -> ExtractedPage:
    """A fetched body that is not HTML (a PDF, a Word file, a spreadsheet linked from a sitemap), read by the
    same parsers as uploads, in the same isolated process. ParseError says why it can't be read."""
    from ingestion.parsers.isolation import parse_file_isolated

    name = unquote(urlsplit(page.final_url).path.rsplit("/", 1)[-1])[:200] or "download"
    if not safe_extension(name):
        name += mimetypes.guess_extension(page.content_type or "") or ""
    with tempfile.TemporaryDirectory() as workdir:
        local = Path(workdir) / f"page{safe_extension(name)}"
        local.write_bytes(page.body)
        segments = parse_file_isolated(
            local,
            name,
            timeout_s=min(settings.UPLOAD_PARSE_TIMEOUT, settings.CRAWL_PAGE_TIME_LIMIT * 2 / 3),
            memory_mb=settings.UPLOAD_PARSE_MEMORY_MB,
        )
    text = "\n\n".join(s.text for s in segments if s.text.strip())
    if not text:
        raise ParseError("We found no text in this file.", "every segment was empty", reason="no_text")
    return ExtractedPage(title=name, text=text, language=None)
