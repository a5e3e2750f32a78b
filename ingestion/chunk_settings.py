"""How a source's text is cut into passages, per source: the chunk size, overlap and record separator that a
source may set (the shared optional fields of ingestion/kinds/base.KindConfig), what they come to with the
deployment's defaults, and a preview of the passages they would make. Changing them indexes the source again,
so it is a write of ingestion.lifecycle (source_set_chunking).

Indexing (ingestion/indexing.py) and the preview both read `chunking_of`, so the preview shows exactly what
indexing will store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from pydantic import ValidationError

from ingestion.kinds.config import KindConfig, KindError
from ingestion.text.chunking import TextChunk, chunk_text
from sources.models import Document, Source
from sources.tenancy import workspace_scope

FIELDS = ("chunk_size", "chunk_overlap", "record_separator")
#: What a preview reads of a source's kept text, and shows of its passages: enough to judge the settings,
#: bounded so a 50,000-page site previews as fast as a note.
PREVIEW_MAX_CHARS = 200_000
PREVIEW_MAX_DOCUMENTS = 5
PREVIEW_MAX_CHUNKS = 50


@dataclass(frozen=True)
class Chunking:
    """What chunk_text is called with for a source."""

    target_chars: int
    overlap_chars: int
    separator: str | None
    #: The separator was found by ingestion (a spreadsheet's rows) and wins over one the user set.
    separator_from_ingestion: bool = False

    def chunks(self, text: str) -> list[TextChunk]:
        return chunk_text(
            text, target_chars=self.target_chars, overlap_chars=self.overlap_chars, separator=self.separator
        )


def validated(values: dict[str, Any]) -> dict[str, Any]:
    """The chunking fields of `values` as Source.config keeps them (an empty or None value: the
    deployment's default, so its key is absent). Raises KindError by field."""
    wanted = {name: values.get(name) for name in FIELDS if values.get(name) not in (None, "")}
    try:
        config = KindConfig.model_validate(wanted)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors():
            # The model's own check (overlap against size) has no field: it is the overlap that is wrong.
            name = ".".join(str(p) for p in error["loc"]) or "chunk_overlap"
            errors.setdefault(name, []).append(error["msg"].removeprefix("Value error, "))
        raise KindError(errors) from exc
    return config.chunking()


def chunking_of(source: Source, chosen: dict[str, Any] | None = None) -> Chunking:
    """The chunking a source's documents get: its own settings (or `chosen`, for a preview), else the
    deployment's CHUNK_* settings; a separator found by ingestion (a spreadsheet's rows) wins."""
    config = source.config if chosen is None else chosen
    size, overlap = config.get("chunk_size"), config.get("chunk_overlap")
    found = source.state.get("chunk_separator")
    return Chunking(
        target_chars=settings.CHUNK_TARGET_CHARS if size is None else size,
        overlap_chars=settings.CHUNK_OVERLAP_CHARS if overlap is None else overlap,
        separator=found or config.get("record_separator") or source.config.get("chunk_separator"),
        separator_from_ingestion=bool(found),
    )


def default_chunking(chosen: dict[str, Any]) -> Chunking:
    """The chunking of text not yet in a source (the add dialog's pasted text)."""
    size, overlap = chosen.get("chunk_size"), chosen.get("chunk_overlap")
    return Chunking(
        target_chars=settings.CHUNK_TARGET_CHARS if size is None else size,
        overlap_chars=settings.CHUNK_OVERLAP_CHARS if overlap is None else overlap,
        separator=chosen.get("record_separator"),
    )


@dataclass(frozen=True)
class PreviewChunk:
    document: str
    position: int
    text: str


@dataclass(frozen=True)
class Preview:
    chunking: Chunking
    chunks: list[PreviewChunk]
    #: Passages the previewed text makes in all (more than `chunks` when cut at PREVIEW_MAX_CHUNKS).
    total: int
    documents: int  # documents previewed
    documents_total: int  # documents of the source with text
    notice: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunking.target_chars,
            "chunk_overlap": self.chunking.overlap_chars,
            "record_separator": self.chunking.separator or "",
            "separator_from_ingestion": self.chunking.separator_from_ingestion,
            "chunks": [{"document": c.document, "position": c.position, "text": c.text} for c in self.chunks],
            "total": self.total,
            "documents": self.documents,
            "documents_total": self.documents_total,
            "notice": self.notice,
        }


def preview(
    *, chunking: Chunking, texts: list[tuple[str, str]], documents_total: int | None = None
) -> Preview:
    """The passages `chunking` makes of each (title, text), the first PREVIEW_MAX_CHUNKS of them kept."""
    shown: list[PreviewChunk] = []
    total = 0
    for title, text in texts:
        pieces = chunking.chunks(text[:PREVIEW_MAX_CHARS])
        total += len(pieces)
        room = PREVIEW_MAX_CHUNKS - len(shown)
        shown.extend(PreviewChunk(document=title, position=p.position, text=p.text) for p in pieces[:room])
    notice = "" if texts else "No text to preview yet: paste some, or wait until it has been fetched."
    return Preview(
        chunking=chunking,
        chunks=shown,
        total=total,
        documents=len(texts),
        documents_total=len(texts) if documents_total is None else documents_total,
        notice=notice,
    )


def source_texts(source: Source) -> tuple[list[tuple[str, str]], int]:
    """The first documents of a source with kept text (title, text), and how many have text."""
    with workspace_scope(source.workspace_id):
        with_text = Document.objects.filter(source_id=source.id).exclude(text="")
        first = list(with_text.order_by("id").values_list("title", "url", "text")[:PREVIEW_MAX_DOCUMENTS])
        return [(title or url or source.title, text) for title, url, text in first], with_text.count()


def source_preview(*, source: Source, chosen: dict[str, Any], text: str = "") -> Preview:
    """What `chosen` (validated() settings) would make of `text`, or of the source's own kept text."""
    chunking = chunking_of(source, {**without_chunking(source.config), **chosen})
    if text.strip():
        return preview(chunking=chunking, texts=[("Pasted text", text)])
    texts, total = source_texts(source)
    return preview(chunking=chunking, texts=texts, documents_total=total)


def without_chunking(config: dict[str, Any]) -> dict[str, Any]:
    """A source's config without its chunking settings."""
    return {k: v for k, v in config.items() if k not in FIELDS}
