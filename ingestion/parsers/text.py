"""Plain text and Markdown: decoded whatever the encoding, split into sections at H1/H2 headings."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from charset_normalizer import from_bytes

from ingestion.parsers.base import ParseError, ParseOptions, Parser, Segment, extension

MAX_TEXT_BYTES = 64 * 1024 * 1024

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def utf16_without_bom(data: bytes) -> str | None:
    """UTF-16 text without a BOM shows NUL bytes on one side of nearly every ASCII character."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even_nuls = sample[0::2].count(0) / len(sample[0::2])
    odd_nuls = sample[1::2].count(0) / len(sample[1::2])
    if odd_nuls > 0.3 and even_nuls < 0.05:
        return "utf-16-le"
    if even_nuls > 0.3 and odd_nuls < 0.05:
        return "utf-16-be"
    return None


def detect_encoding(data: bytes) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    utf16 = utf16_without_bom(data)
    if utf16:
        return utf16
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    matches = from_bytes(data[: 256 * 1024])
    best = matches.best()
    if best is None:
        # Latin-1 maps every byte: the honest last resort for 8-bit text nothing else explains.
        return "latin-1"
    tied = {m.encoding for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)}
    # Short Western text fits cp1250, cp1252 and cp1257 equally well; cp1252 (Latin-1's superset) is by
    # far the likeliest, and a real Central European file is told apart by its letters (no tie).
    return "cp1252" if "cp1252" in tied else best.encoding


def decode_text(data: bytes) -> tuple[str, str]:
    """(text, encoding). NUL bytes left after decoding are dropped: they are padding, never content."""
    encoding = detect_encoding(data)
    text = data.decode(encoding, errors="replace")
    return text.replace("\x00", ""), encoding


def read_text(path: Path) -> tuple[str, str]:
    size = path.stat().st_size
    if size > MAX_TEXT_BYTES:
        raise ParseError(
            "The text file is too large to index. Split it into files under 64 MB.",
            f"{size} bytes > {MAX_TEXT_BYTES}",
            reason="too_large",
            final=True,
        )
    return decode_text(path.read_bytes())


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^\s{0,3}(#{1,2})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")


def split_markdown(text: str, *, meta: dict | None = None) -> list[Segment]:
    """One segment per H1/H2 section (ATX `#`/`##` or setext underlines), code fences left whole.

    The heading line stays in the segment's text so the chunker still sees it; it is also the title.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    sections: list[tuple[str, list[str]]] = [("", [])]
    fence: str | None = None
    for i, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)[0]
            fence = None if fence == marker else (fence or marker)
        if fence is not None or fence_match:
            sections[-1][1].append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            sections.append((atx.group(2).strip(), [line]))
            continue
        previous = sections[-1][1][-1] if sections[-1][1] else ""
        setext = _SETEXT.match(line)
        # A line of dashes under a paragraph line is an H2; a blank line before it makes it a rule.
        if setext and previous.strip() and i > 0 and not _ATX.match(previous) and len(sections[-1][1]) > 0:
            heading = sections[-1][1].pop()
            level = "#" if setext.group(1)[0] == "=" else "##"
            sections.append((heading.strip(), [f"{level} {heading.strip()}"]))
            continue
        sections[-1][1].append(line)
    segments = []
    for position, (title, body) in enumerate(sections):
        body_text = "\n".join(body).strip()
        if body_text:
            segments.append(Segment(body_text, title=title, meta={**(meta or {}), "section": position}))
    return segments


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def join_blocks(blocks: list[str]) -> str:
    """Markdown blocks separated by blank lines, except list items, which stay one list."""
    out = ""
    for block in blocks:
        if not block.strip():
            continue
        if out:
            tight = _LIST_ITEM.match(block) and _LIST_ITEM.match(out.rsplit("\n", 1)[-1])
            out += "\n" if tight else "\n\n"
        out += block
    return out


class TextParser(Parser):
    name = "text"

    def score(self, sniffed_type: str, filename: str) -> int:
        if sniffed_type == "text/markdown":
            return 100
        if sniffed_type == "text/plain":
            return 90
        # The last resort for any text: a CSV that will not parse as a table is still worth its words.
        return 20 if sniffed_type.startswith("text/") else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        text, encoding = read_text(path)
        # A vertical tab is a soft line break (Word, PowerPoint, FileMaker exports).
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
        meta = {"encoding": encoding}
        if extension(filename) in ("md", "markdown") or "\n#" in text or text.startswith("#"):
            return split_markdown(text, meta=meta)
        stripped = text.strip()
        return [Segment(stripped, meta=meta)] if stripped else []
