"""Limits for files that unpack: zip containers (DOCX, XLSX, ODT, ODS) and the XML inside them.

The zip directory is checked before anything is extracted. Python's zipfile never returns more bytes than
a member declares (a member that lies fails its CRC check), so the declared sizes are a safe bound.
XML from outside is parsed with defusedxml; office XML never needs a DTD, so one is refused outright.
"""

from __future__ import annotations

import codecs
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as DefusedET
from defusedxml import DefusedXmlException

from ingestion.parsers.base import ParseError, corrupt


@dataclass(frozen=True)
class ZipLimits:
    max_members: int = 10_000
    max_total_bytes: int = 1024 * 1024 * 1024
    # Ratios are only judged past this size: small XML parts compress 50:1 and are harmless.
    ratio_floor_bytes: int = 20 * 1024 * 1024
    max_ratio: float = 100.0
    max_member_bytes: int = 512 * 1024 * 1024


DEFAULT_ZIP_LIMITS = ZipLimits()


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def zip_bomb(detail: str, why: str) -> ParseError:
    return ParseError(
        f"Zip bomb: {why}. The file was not opened; if it is genuine, split it into smaller files.",
        detail,
        reason="zip_bomb",
        final=True,
    )


def check_zip(path: Path, limits: ZipLimits = DEFAULT_ZIP_LIMITS) -> None:
    """Refuse a zip whose directory promises more than we are willing to unpack."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as exc:
        raise corrupt(f"zip directory unreadable: {exc}") from exc
    if len(members) > limits.max_members:
        raise zip_bomb(f"{len(members)} members > {limits.max_members}", f"{len(members)} files inside")
    total = sum(member.file_size for member in members)
    packed = sum(member.compress_size for member in members) or 1
    biggest = max(members, key=lambda member: member.file_size, default=None)
    if biggest is not None and biggest.file_size > limits.max_member_bytes:
        raise zip_bomb(
            f"member {biggest.filename!r} declares {biggest.file_size} bytes",
            f"one part would unpack to {_mb(biggest.file_size)}",
        )
    if total > limits.max_total_bytes:
        raise zip_bomb(
            f"total uncompressed {total} bytes > {limits.max_total_bytes}",
            f"it would unpack to {_mb(total)}, over the {_mb(limits.max_total_bytes)} limit",
        )
    if total > limits.ratio_floor_bytes and total / packed > limits.max_ratio:
        raise zip_bomb(
            f"ratio {total / packed:.0f}:1 over {total} bytes",
            f"it would unpack to {total / packed:.0f} times its size",
        )


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Everything an XML prolog may hold before the root element: declaration, comments, PIs, whitespace.
_PROLOG_ITEM = re.compile(r"\s+|<\?.*?\?>|<!--.*?-->", re.S)


def _xml_head_text(head: bytes) -> str:
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return head[len(bom) :].decode(encoding, errors="ignore")
    if head[:2] in (b"<\x00", b"\x00<"):
        return head.decode("utf-16-le" if head[0] == 0x3C else "utf-16-be", errors="ignore")
    return head.decode("utf-8", errors="ignore")


def xml_has_dtd(head: bytes) -> bool:
    """True when the XML declares a DTD (the door to entity expansion) before its root element."""
    text = _xml_head_text(head)
    position = 0
    while True:
        match = _PROLOG_ITEM.match(text, position)
        if not match:
            break
        position = match.end()
    return text.startswith("<!DOCTYPE", position) or text.startswith("<!ENTITY", position)


def unsafe_xml(detail: str) -> ParseError:
    return ParseError(
        "The file contains XML that tries to expand entities (a 'billion laughs' attack) and was not read.",
        detail,
        reason="unsafe_xml",
        final=True,
    )


def check_zip_xml(path: Path, *, head_bytes: int = 64 * 1024) -> None:
    """Refuse office files whose XML parts carry a DTD; the parsers we hand them to never need one."""
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            if not member.filename.lower().endswith((".xml", ".rels")) or member.file_size == 0:
                continue
            with archive.open(member) as stream:
                head = stream.read(head_bytes)
            if xml_has_dtd(head):
                raise unsafe_xml(f"DTD in zip member {member.filename!r}")


def check_office_zip(path: Path, limits: ZipLimits = DEFAULT_ZIP_LIMITS) -> None:
    check_zip(path, limits)
    check_zip_xml(path)


def parse_xml(data: bytes, where: str) -> Element:
    """Parse untrusted XML with entity expansion and external references forbidden."""
    try:
        return DefusedET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise unsafe_xml(f"{where}: {exc!r}") from exc
    except DefusedET.ParseError as exc:
        raise corrupt(f"{where}: {exc}") from exc


@dataclass(frozen=True)
class GzipLimits:
    # As large as the biggest text or HTML file we parse (parsers/text.py MAX_TEXT_BYTES).
    max_bytes: int = 64 * 1024 * 1024
    ratio_floor_bytes: int = 20 * 1024 * 1024
    max_ratio: float = 100.0


def gunzip_limited(source: Path, target: Path, limits: GzipLimits = GzipLimits()) -> None:
    """Decompress a gzip file into `target`, a chunk at a time, and stop as soon as it outgrows the limits:
    a gzip stream declares no trustworthy size, so the only safe bound is the bytes actually produced."""
    import zlib

    packed = source.stat().st_size or 1
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    written = 0
    try:
        with source.open("rb") as stream, target.open("wb") as out:
            while True:
                chunk = stream.read(64 * 1024)
                data = inflater.decompress(chunk, 1024 * 1024) if chunk else b""
                while True:
                    written += len(data)
                    if written > limits.max_bytes:
                        raise zip_bomb(
                            f"gzip output past {limits.max_bytes} bytes",
                            f"it unpacks to more than {_mb(limits.max_bytes)}",
                        )
                    if written > limits.ratio_floor_bytes and written / packed > limits.max_ratio:
                        raise zip_bomb(
                            f"gzip ratio past {limits.max_ratio:.0f}:1 at {written} bytes",
                            f"it unpacks to more than {limits.max_ratio:.0f} times its size",
                        )
                    out.write(data)
                    if not inflater.unconsumed_tail:
                        break
                    data = inflater.decompress(inflater.unconsumed_tail, 1024 * 1024)
                if not chunk or inflater.eof:
                    break
    except zlib.error as exc:
        raise corrupt(f"gzip: {exc}") from exc
    if not inflater.eof:
        raise corrupt("gzip: the stream ends before its end marker (truncated file)")
