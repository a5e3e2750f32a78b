"""Split text into passages that keep their meaning.

The chunker prefers the strongest boundary that fits: Markdown headings, then blank lines (paragraphs,
packed greedily up to the target size), then line breaks (extracted pages put each block, list item
and code line on a line of its own), then sentences, and only as a last resort a plain character
window. A small overlap of whole sentences carries context across a seam. Each cut is put back with
what it cut, so a list stays a list and code keeps its lines.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass

CHUNK_NAMESPACE = uuid.UUID("6f1f3f5e-7c1b-4d2a-9a55-2b1f0c9e7d11")

_HEADING = re.compile(r"(?m)^(?=#{1,6}\s)")
_PARAGRAPH = re.compile(r"\n\s*\n")
_LINE = re.compile(r"\n")
# A sentence ends at . ! ? or their CJK forms, followed by space or the end; abbreviations may split
# early, which costs little because sentences are packed back together.
_SENTENCE = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[\u3002\uff01\uff1f])")


@dataclass(frozen=True)
class TextChunk:
    position: int
    text: str


def chunk_id(document_id: int, position: int, text: str) -> uuid.UUID:
    """A stable id: the same text at the same place of the same document gets the same id."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    return uuid.uuid5(CHUNK_NAMESPACE, f"{document_id}:{position}:{digest}")


#: What joins the records packed into one chunk when their separator has something visible: a paragraph
#: break, which every reader (the answerer's segmenter, citations, an LLM) takes as a boundary. A bare
#: "---" or "###" would be shown to visitors as part of a record ("---Q: What is...", issue #56).
RECORD_JOINER = "\n\n"


def record_joiner(separator: str) -> str:
    """A separator of whitespace alone (JSON Lines' "\n") is invisible already and joins its records as
    it did in the text; any other is replaced by RECORD_JOINER."""
    return separator if not separator.strip() else RECORD_JOINER


def chunk_records(text: str, *, separator: str, target_chars: int = 2000) -> list[TextChunk]:
    """Record mode, for JSONL, CSV rows, FAQ dumps and logs: cut only at `separator` and pack whole
    records up to the target size, joined by record_joiner(separator), with no overlap (a record is
    never split, so one longer than the target is a chunk of its own)."""
    if not separator:
        raise ValueError("record mode needs a separator")
    records = [r.strip() for r in text.split(separator) if r.strip()]
    joiner = record_joiner(separator)
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for record in records:
        if current and size + len(joiner) + len(record) > target_chars:
            chunks.append(joiner.join(current))
            current, size = [], 0
        current.append(record)
        size += len(record) + (len(joiner) if len(current) > 1 else 0)
    if current:
        chunks.append(joiner.join(current))
    return [TextChunk(position=i, text=chunk) for i, chunk in enumerate(chunks)]


def chunk_text(
    text: str, *, target_chars: int = 2000, overlap_chars: int = 200, separator: str | None = None
) -> list[TextChunk]:
    if target_chars < 100:
        raise ValueError("target_chars must be at least 100")
    if separator:
        return chunk_records(text, separator=separator, target_chars=target_chars)
    overlap_chars = max(0, min(overlap_chars, target_chars // 4))
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return []
    pieces: list[tuple[str, str]] = []
    for section in (s for s in _HEADING.split(text) if s.strip()):
        pieces.extend(_split_to_fit(section.strip(), target_chars, level=0, joiner="\n\n"))
    packed = _pack(pieces, target_chars, overlap_chars)
    return [TextChunk(position=i, text=chunk) for i, chunk in enumerate(packed)]


def _split_to_fit(text: str, limit: int, *, level: int, joiner: str) -> list[tuple[str, str]]:
    """Cut text into (piece, joiner) pairs no longer than limit, at the strongest boundary available.

    The joiner is what separated the piece from the one before it: a blank line between paragraphs,
    a space between sentences of one paragraph, so packing puts the text back together faithfully.
    """
    if len(text) <= limit:
        return [(text, joiner)]
    splitters = ((_PARAGRAPH, "\n\n"), (_LINE, "\n"), (_SENTENCE, " "))
    if level >= len(splitters):
        return [(piece, " ") for piece in _window(text, limit)]
    splitter, inner_joiner = splitters[level]
    parts = [p.strip() for p in splitter.split(text) if p.strip()]
    if len(parts) <= 1:
        return _split_to_fit(text, limit, level=level + 1, joiner=joiner)
    out: list[tuple[str, str]] = []
    for i, part in enumerate(parts):
        out.extend(_split_to_fit(part, limit, level=level + 1, joiner=joiner if i == 0 else inner_joiner))
    return out


def _window(text: str, limit: int) -> list[str]:
    """Last resort for text with no sentence boundary: cut at whitespace near the limit."""
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return out


def _pack(pieces: list[tuple[str, str]], limit: int, overlap: int) -> list[str]:
    chunks: list[str] = []
    current = ""
    for piece, joiner in pieces:
        starts_section = piece.startswith("#")
        if current and (len(current) + len(joiner) + len(piece) > limit or starts_section):
            chunks.append(current)
            current = "" if starts_section else _overlap_tail(current, overlap)
            if len(current) + len(joiner) + len(piece) > limit:
                current = ""
        current = f"{current}{joiner}{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def _overlap_tail(chunk: str, overlap: int) -> str:
    """The end of the previous chunk, up to `overlap` characters, to start the next: its last whole
    lines, or when even the last line is longer, that line's last whole sentences."""
    if overlap <= 0:
        return ""
    lines = chunk.rsplit("\n\n", 1)[-1].split("\n")
    tail: list[str] = []
    for line in reversed(lines):
        if sum(len(kept) + 1 for kept in tail) + len(line) > overlap:
            break
        tail.insert(0, line)
    if tail:
        return "\n".join(tail)
    sentences = [s.strip() for s in _SENTENCE.split(lines[-1]) if s.strip()]
    size = 0
    for sentence in reversed(sentences):
        if size + len(sentence) > overlap:
            break
        tail.insert(0, sentence)
        size += len(sentence) + 1
    return " ".join(tail)
