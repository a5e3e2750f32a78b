"""Which parser reads a file: chosen by what the bytes are, not by what the name says.

`sniff` reads magic bytes; `detect_type` then looks inside containers (a zip's content types, an OLE
file's streams) to tell DOCX from XLSX and DOC from XLS. Every registered parser scores the sniffed type;
the best tries first and a failing one hands over to the next before the file is declared unreadable.
Parsers are imported lazily, so a worker that never sees a PDF never loads the PDF libraries.
"""

from __future__ import annotations

import csv
import importlib
import io
import logging
import re
import zipfile
from functools import cache
from pathlib import Path

from ingestion.parsers.base import (
    ParseError,
    ParseOptions,
    Parser,
    Segment,
    corrupt,
    extension,
    no_text,
    password_protected,
)
from ingestion.parsers.csv import DELIMITERS
from ingestion.parsers.isolation import parse_file_isolated
from ingestion.parsers.text import decode_text, utf16_without_bom

log = logging.getLogger(__name__)

__all__ = ["PARSERS", "ParseError", "Segment", "detect_type", "parse_file", "parse_file_isolated", "sniff"]

# Dotted paths, best first within a family; scores decide the order for each file.
PARSERS = [
    "ingestion.parsers.pdf.PdfParser",
    "ingestion.parsers.pdf.PypdfTextParser",
    "ingestion.parsers.docx.DocxParser",
    "ingestion.parsers.docx.DocxXmlTextParser",
    "ingestion.parsers.xlsx.XlsxParser",
    "ingestion.parsers.xlsx.CalamineXlsxParser",
    "ingestion.parsers.office.AntiwordParser",
    "ingestion.parsers.office.CatdocParser",
    "ingestion.parsers.office.LibreOfficeParser",
    "ingestion.parsers.office.XlsParser",
    "ingestion.parsers.office.OdtParser",
    "ingestion.parsers.office.OdsParser",
    "ingestion.parsers.html.HtmlParser",
    "ingestion.parsers.html.HtmlTextParser",
    "ingestion.parsers.csv.CsvParser",
    "ingestion.parsers.text.TextParser",
    "ingestion.parsers.gzipped.GzipParser",
]

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
DOC = "application/msword"
XLS = "application/vnd.ms-excel"
ENCRYPTED_OOXML = "application/x-ooxml-encrypted"
OLE = "application/x-ole-storage"
ZIP = "application/zip"
OCTET = "application/octet-stream"

SNIFF_BYTES = 8192
MAX_FILE_BYTES = 512 * 1024 * 1024

_MAGIC = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", OLE),
    (b"{\\rtf", "application/rtf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\x1f\x8b", "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"Rar!", "application/vnd.rar"),
)
_TEXT_EXTENSIONS = {
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "tab": "text/tab-separated-values",
    "md": "text/markdown",
    "markdown": "text/markdown",
}
_HTML_START = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)[\s>]", re.I | re.S)


# Whitespace as str.isspace() and C's isspace() know it, and NUL (below). The vertical tab (11) is the line
# break inside a cell in FileMaker exports and a soft line break in Word and PowerPoint text pasted into a
# spreadsheet: a small CSV whose quoted header cell held one was over the 2 % of control bytes below and
# refused as "not supported" (#52).
_TEXT_CONTROLS = frozenset((0, 9, 10, 11, 12, 13))


def _looks_like_text(head: bytes) -> bool:
    if not head:
        return False
    if head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return True
    if utf16_without_bom(head):
        return True
    sample = head[:SNIFF_BYTES]
    controls = sum(1 for byte in sample if byte < 32 and byte not in _TEXT_CONTROLS)
    nuls = sample.count(0)
    # Stray NULs happen in exported CSVs; binary formats are full of them and of other control bytes.
    return controls / len(sample) < 0.02 and nuls / len(sample) < 0.3


def _zip_type_from_head(head: bytes) -> str:
    if head[30:38] == b"mimetype":
        if b"opendocument.spreadsheet" in head[38:120]:
            return ODS
        if b"opendocument.text" in head[38:120]:
            return ODT
    if b"word/" in head:
        return DOCX
    if b"xl/" in head:
        return XLSX
    return ZIP


def sniff(data_head: bytes, filename: str) -> str:
    """A MIME-like type from the first bytes; the name only chooses among text flavours."""
    if not data_head:
        return "application/x-empty"
    marker = data_head.find(b"%PDF-", 0, 1024)
    # Readers accept junk before the header, but a text that merely mentions "%PDF-" is still text.
    if marker == 0 or (
        marker > 0 and not (data_head[:marker].strip() and _looks_like_text(data_head[:marker]))
    ):
        return PDF
    if data_head.startswith(b"PK\x03\x04"):
        return _zip_type_from_head(data_head)
    for magic, mime in _MAGIC:
        if data_head.startswith(magic):
            return mime
    if not _looks_like_text(data_head):
        return OCTET
    text_head = decode_text(data_head)[0].lstrip("\ufeff").encode("utf-8", "replace")
    ext = extension(filename)
    if _HTML_START.match(text_head) or (ext in ("html", "htm", "xhtml") and text_head.lstrip()[:1] == b"<"):
        return "text/html"
    if text_head.lstrip().startswith(b"<?xml"):
        return "text/html" if b"<html" in text_head.lower() else "application/xml"
    if ext in _TEXT_EXTENSIONS:
        return _TEXT_EXTENSIONS[ext]
    if ext not in _PROSE_EXTENSIONS and _looks_tabular(
        text_head.decode("utf-8", "replace"), complete=len(data_head) < SNIFF_BYTES
    ):
        return "text/csv"
    return "text/plain"


_PROSE_EXTENSIONS = {"txt", "text", "log", "rst", "adoc", "org"}
# Two lines with a comma each are a sentence or two as often as a table.
MIN_TABLE_RECORDS = 3


def _looks_tabular(text: str, *, complete: bool) -> bool:
    """A CSV under another name: parsed as CSV, records rather than lines (a quoted cell may span lines,
    a header cell included), every record as wide as the first, two fields at least, three records at
    least. `complete` says the text is the whole file; otherwise its last record may be cut off."""
    try:
        dialect = csv.Sniffer().sniff(text, delimiters=DELIMITERS)
        records = [
            row for row in csv.reader(io.StringIO(text, newline=""), dialect) if any(map(str.strip, row))
        ]
    except csv.Error:
        return False
    if not complete:
        records = records[:-1]
    widths = {len(row) for row in records}
    return len(records) >= MIN_TABLE_RECORDS and len(widths) == 1 and widths.pop() >= 2


_MAIN_PART = re.compile(
    rb'ContentType="application/vnd\.(openxmlformats-officedocument|ms-[a-z]+)\.([a-z.]+)\.main\+xml"'
)


def _zip_type(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "mimetype" in names:
                mimetype = archive.read("mimetype")[:100].strip()
                if mimetype.startswith(b"application/vnd.oasis.opendocument.spreadsheet"):
                    return ODS
                if mimetype.startswith(b"application/vnd.oasis.opendocument.text"):
                    return ODT
            if "[Content_Types].xml" in names and archive.getinfo("[Content_Types].xml").file_size < 1 << 20:
                content_types = archive.read("[Content_Types].xml")
                for match in _MAIN_PART.finditer(content_types):
                    kind = match.group(2)
                    if kind.startswith((b"wordprocessingml", b"document")):
                        return DOCX
                    if kind.startswith((b"spreadsheetml", b"sheet")):
                        return XLSX
            if any(name.startswith("word/") for name in names):
                return DOCX
            if any(name.startswith("xl/") for name in names):
                return XLSX
    except (zipfile.BadZipFile, OSError, EOFError):
        return ZIP
    return ZIP


def _ole_type(path: Path) -> str:
    import olefile

    try:
        with olefile.OleFileIO(str(path)) as ole:
            streams = {"/".join(entry) for entry in ole.listdir()}
    except (OSError, ValueError, IndexError, EOFError) as exc:
        log.info("unreadable OLE container %s: %r", path.name, exc)
        return OLE
    if "EncryptedPackage" in streams:
        return ENCRYPTED_OOXML
    if "WordDocument" in streams:
        return DOC
    if "Workbook" in streams or "Book" in streams:
        return XLS
    return OLE


def detect_type(path: Path, filename: str) -> str:
    """`sniff`, then a look inside containers whose first bytes do not tell what they hold."""
    with path.open("rb") as stream:
        head = stream.read(SNIFF_BYTES)
    sniffed = sniff(head, filename)
    if sniffed in (ZIP, DOCX, XLSX, ODT, ODS):
        return _zip_type(path) if zipfile.is_zipfile(path) else sniffed
    if sniffed == OLE:
        return _ole_type(path)
    return sniffed


@cache
def _load(dotted: str) -> Parser:
    module_name, class_name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module_name), class_name)()


def parsers_for(sniffed_type: str, filename: str) -> list[Parser]:
    scored = []
    for position, dotted in enumerate(PARSERS):
        parser = _load(dotted)
        score = parser.score(sniffed_type, filename)
        if score > 0:
            scored.append((-score, position, parser))
    return [parser for _, _, parser in sorted(scored, key=lambda item: item[:2])]


def _unsupported(sniffed_type: str, filename: str) -> ParseError:
    if sniffed_type == ENCRYPTED_OOXML:
        return password_protected(f"OLE container with EncryptedPackage ({filename!r})")
    if sniffed_type == "application/x-empty":
        return ParseError("The file is empty.", "0 bytes", reason="empty", final=True)
    return ParseError(
        "This file type is not supported. "
        "Upload PDF, Word, Excel, OpenDocument, CSV, Markdown, plain text or HTML.",
        f"sniffed {sniffed_type} for name {filename!r}",
        reason="unsupported",
        final=True,
    )


def parse_file(path: Path, filename: str, *, options: ParseOptions | None = None) -> list[Segment]:
    """Segments of the file at `path`; `filename` is the uploader's name for it, a hint and never a path."""
    options = options or ParseOptions()
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ParseError(
            "The file is too large to index (over 512 MB). Split it into smaller files.",
            f"{size} bytes",
            reason="too_large",
            final=True,
        )
    sniffed = detect_type(path, filename)
    candidates = parsers_for(sniffed, filename)
    if not candidates:
        raise _unsupported(sniffed, filename)
    failures: list[tuple[str, ParseError]] = []
    for parser in candidates:
        try:
            segments = parser.parse(path, filename, options)
        except ParseError as exc:
            failures.append((parser.name, exc))
            if exc.final:
                break
            continue
        except MemoryError:
            raise
        except Exception as exc:
            # A library tripping over an odd file is not the file's last chance: the next parser may cope.
            log.info("parser %s failed on %s", parser.name, sniffed, exc_info=True)
            failures.append((parser.name, corrupt(f"{type(exc).__name__}: {exc}")))
            continue
        segments = [segment for segment in segments if segment.text.strip()]
        if segments:
            for segment in segments:
                segment.meta.setdefault("parser", parser.name)
                segment.meta.setdefault("content_type", sniffed)
            return segments
        failures.append((parser.name, no_text(f"{parser.name} found no text")))
    # The most specific reason wins; "no text" and "corrupt" only when nothing better was said.
    generic = ("no_text", "corrupt", "unreadable")
    chosen = next((exc for _, exc in failures if exc.reason not in generic), failures[0][1])
    if chosen.reason == "no_text":
        chosen = next((exc for _, exc in failures if exc.reason == "corrupt"), chosen)
    tried = "; ".join(f"{name}: {exc.detail}" for name, exc in failures)
    raise ParseError(
        chosen.message, f"{sniffed}: {tried}", reason=chosen.reason, final=chosen.final
    ) from chosen
