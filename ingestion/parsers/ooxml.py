"""Strict OOXML (ISO 29500 Strict) read by libraries that only know Transitional OOXML.

python-docx and openpyxl look elements up by the Transitional namespaces. Strict files name the same
elements under purl.oclc.org namespaces, so their XML parts are rewritten, in memory, to Transitional
names before loading. The zip has already passed the size checks, so the copy is bounded.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

# Longest first: a prefix must not be replaced before the longer name that contains it.
STRICT_TO_TRANSITIONAL = sorted(
    {
        b"http://purl.oclc.org/ooxml/wordprocessingml/main": (
            b"http://schemas.openxmlformats.org/wordprocessingml/2006/main"
        ),
        b"http://purl.oclc.org/ooxml/spreadsheetml/main": (
            b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"
        ),
        b"http://purl.oclc.org/ooxml/officeDocument/relationships": (
            b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"
        ),
        b"http://purl.oclc.org/ooxml/officeDocument/math": (
            b"http://schemas.openxmlformats.org/officeDocument/2006/math"
        ),
        b"http://purl.oclc.org/ooxml/officeDocument/sharedTypes": (
            b"http://schemas.openxmlformats.org/officeDocument/2006/sharedTypes"
        ),
        b"http://purl.oclc.org/ooxml/officeDocument/extendedProperties": (
            b"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"
        ),
        b"http://purl.oclc.org/ooxml/officeDocument/customProperties": (
            b"http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"
        ),
        b"http://purl.oclc.org/ooxml/officeDocument/docPropsVTypes": (
            b"http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"
        ),
        b"http://purl.oclc.org/ooxml/drawingml/main": b"http://schemas.openxmlformats.org/drawingml/2006/main",
        b"http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing": (
            b"http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
        ),
        b"http://purl.oclc.org/ooxml/drawingml/spreadsheetDrawing": (
            b"http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
        ),
        b"http://purl.oclc.org/ooxml/drawingml/picture": (
            b"http://schemas.openxmlformats.org/drawingml/2006/picture"
        ),
        b"http://purl.oclc.org/ooxml/drawingml/chart": b"http://schemas.openxmlformats.org/drawingml/2006/chart",
    }.items(),
    key=lambda pair: -len(pair[0]),
)
STRICT_MARKER = b"http://purl.oclc.org/ooxml/"


def is_strict(path: Path) -> bool:
    """True when the package's root relationships or content use Strict namespaces."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        if "_rels/.rels" in names and STRICT_MARKER in archive.read("_rels/.rels"):
            return True
        for name in ("word/document.xml", "xl/workbook.xml"):
            if name in names:
                with archive.open(name) as stream:
                    if STRICT_MARKER in stream.read(4096):
                        return True
    return False


def to_transitional(path: Path) -> io.BytesIO:
    """An in-memory copy of the package with Strict namespaces renamed to Transitional ones."""
    copy = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename.lower().endswith((".xml", ".rels")):
                for strict, transitional in STRICT_TO_TRANSITIONAL:
                    data = data.replace(strict, transitional)
            target.writestr(member, data)
    copy.seek(0)
    return copy


def open_package(path: Path) -> Path | io.BytesIO:
    """What to hand python-docx or openpyxl: the file itself, or its Transitional copy."""
    return to_transitional(path) if is_strict(path) else path
