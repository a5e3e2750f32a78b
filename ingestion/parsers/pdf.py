"""PDF: reading-ordered text from pypdfium2, ruled tables from pdfplumber, unreadable pages through OCR.

Every page's words come from PDFium (pypdfium2), far faster than pdfminer (docs/BENCHMARKS.md), and go
through the same reading-order code (`pdf_layout`: columns, running headers, hyphenation). pdfplumber's
table finder runs only on pages whose drawn lines close a grid (`pdf_text.ruled_cell`), since only there
can it find a table. A page drawn turned (a landscape page shown upright through /Rotate) is read in
the direction its text runs. Pages without usable text (a scan, text drawn as curves, a font without a
Unicode map, a full-page image between text pages) and pages whose text does not read as words
(`text_check`) are rendered and read by Tesseract; a page whose text is garbage and that OCR cannot
read either is refused with the reason, never indexed. pypdf stays as the fallback reader for files
PDFium will not open, under the same refusal of garbage.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion.parsers.base import (
    ParseError,
    ParseOptions,
    Parser,
    Segment,
    corrupt,
    password_protected,
    report_progress,
)
from ingestion.parsers.pdf_layout import (
    Box,
    Rule,
    margin_lines,
    page_text,
    repeated_margin_keys,
    strip_margins,
    words_to_boxes,
)
from ingestion.parsers.pdf_ocr import Ocr, scanned_without_ocr
from ingestion.parsers.pdf_text import GARBAGE_SHARE, IMAGE_PAGE_COVER, MIN_GARBLED, PageReading, read_page
from ingestion.parsers.tables import markdown_table
from ingestion.parsers.text_check import text_problem

log = logging.getLogger(__name__)

PDF = "application/pdf"
# A table whose cells hold more lines than this on average is a page frame around columns, not data.
MAX_TABLE_CELL_LINES = 4


# A page with fewer characters than this outside its running header and footer says nothing on its own.
MIN_BODY_CHARS = 20


@dataclass
class PageLayout:
    boxes: list[Box]
    rules: list[Rule]
    width: float
    height: float
    reading: PageReading


def check_complete(path: Path) -> None:
    """A PDF ends with %%EOF; without it the download or upload was cut short."""
    size = path.stat().st_size
    with path.open("rb") as stream:
        stream.seek(max(0, size - 4096))
        tail = stream.read()
    if b"%%EOF" not in tail:
        raise ParseError(
            "The file is truncated or corrupt: the PDF ends early. Download or export it again.",
            "no %%EOF in the last 4 KB",
            reason="corrupt",
            final=True,
        )


def _split_banded_rows(rows: list[list[str]]) -> list[list[str]]:
    """Tables ruled every few rows (one rule per five states, say) come out as cells of several lines;
    when every filled cell of a row has the same number of lines, those lines are the real rows."""
    result: list[list[str]] = []
    for row in rows:
        counts = {cell.count("\n") + 1 for cell in row if cell}
        if len(counts) == 1 and (lines := counts.pop()) > 1 and sum(1 for cell in row if cell) > 1:
            split = [cell.split("\n") if cell else [""] * lines for cell in row]
            result.extend([column[i] for column in split] for i in range(lines))
        else:
            result.append(row)
    return result


def _tables(page: Any) -> list[Box]:
    blocks = []
    for table in page.find_tables():
        rows = [[(cell or "").strip() for cell in row] for row in table.extract()]
        rows = _split_banded_rows(rows)
        filled = [cell for row in rows for cell in row if cell]
        if len(rows) < 2 or max(len(row) for row in rows) < 2 or len(filled) < 3:
            continue
        if sum(cell.count("\n") + 1 for cell in filled) / len(filled) > MAX_TABLE_CELL_LINES:
            continue
        x0, top, x1, bottom = table.bbox
        blocks.append(Box(x0, top, x1, bottom, markdown_table(rows), block=True))
    return blocks


def _inside(box: Box, block: Box) -> bool:
    middle_x, middle_y = (box.x0 + box.x1) / 2, (box.top + box.bottom) / 2
    return block.x0 <= middle_x <= block.x1 and block.top <= middle_y <= block.bottom


GARBLED = "garbled text layer"
# Why a page's text layer was set aside: these pages hold text we cannot trust, so they are refused
# rather than indexed when OCR cannot read them either. The other reasons (a scan, a figure) mean the
# page has no text of its own, and OCR finding nothing there is no fault.
_UNTRUSTED_PREFIXES = (GARBLED, "text layer:")


def _ocr_reason(page: PageLayout, body: list[Box], text: str, languages: str) -> str | None:
    """Why the page must be read from its image, or None when its text layer will do."""
    reading = page.reading
    if reading.glyph_problem:
        return GARBLED
    if not page.boxes:
        return "no text layer" if reading.drawn else None
    body_chars = sum(len(box.text) for box in body if not box.block)
    if body_chars < MIN_BODY_CHARS and reading.image_cover >= IMAGE_PAGE_COVER:
        return "image-only page"
    if problem := text_problem(text, languages):
        return f"text layer: {problem}"
    return None


def _untrusted(reason: str) -> bool:
    return reason.startswith(_UNTRUSTED_PREFIXES)


def garbled_refusal(refused: dict[int, str], *, ocr_available: bool, languages: str) -> ParseError:
    """Every page's text is garbage and OCR could not do better: the file is refused, never indexed."""
    detail = "; ".join(f"page {index + 1}: {why}" for index, why in sorted(refused.items()))
    if not any(_untrusted(why) for why in refused.values()):
        message = (
            "Scanned PDF: text recognition (OCR) could not read its pages as text. The scan may be too "
            f"faint or blurred, or in a language not installed for recognition ({languages})."
        )
    elif ocr_available:
        message = (
            "The PDF's text cannot be read: its text layer is garbled (a font without a Unicode map, or "
            "text that does not read as words), and text recognition (OCR) could not read the pages "
            "either. Export the PDF again from the original document, or upload the original."
        )
    else:
        message = (
            "The PDF's text cannot be read: its text layer is garbled (a font without a Unicode map, or "
            "text that does not read as words), and text recognition (OCR) is not available on this "
            "server to read the pages instead. Upload the original document, or ask an administrator "
            "to install Tesseract."
        )
    return ParseError(message, detail, reason="garbled_text", final=True)


def _pdfminer_pages(
    path: Path, readings: list[PageReading]
) -> dict[int, tuple[list[dict] | None, list[Box]]]:
    """pdfplumber's words (where PDFium's cannot be used) and ruled tables (where drawn lines close a
    grid), page by page; the other pages are never parsed by pdfminer. A file pdfminer refuses keeps
    PDFium's words and has no tables."""
    wanted = [i for i, r in enumerate(readings) if r.needs_pdfminer or (r.words and r.may_have_ruled_table)]
    if not wanted:
        return {}
    try:
        pdf = _open(path)
    except ParseError as exc:
        log.info("pdfplumber could not open %s: %s", path.name, exc.detail)
        return {}
    found: dict[int, tuple[list[dict] | None, list[Box]]] = {}
    with pdf:
        for position, index in enumerate(wanted):
            report_progress("tables", position + 1, len(wanted))
            page = pdf.pages[index]
            words = None
            if readings[index].needs_pdfminer:
                words = page.extract_words(x_tolerance=1.5, y_tolerance=3, keep_blank_chars=False)
            tables = _tables(page) if readings[index].may_have_ruled_table else []
            found[index] = (words, tables)
            page.close()  # pdfplumber caches every object of a page; a long PDF would pile them up
    return found


def _read_pages(path: Path) -> list[PageReading]:
    import pypdfium2

    try:
        # PDFium tries the empty user password itself, so owner-only protection opens.
        document = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as exc:
        if getattr(exc, "err_code", None) == pypdfium2.raw.FPDF_ERR_PASSWORD:
            raise password_protected(f"pdfium: {exc}") from exc
        raise corrupt(f"pdfium: {exc}") from exc
    readings = []
    try:
        for index in range(len(document)):
            report_progress("parsing", index + 1, len(document))
            page = document[index]
            try:
                readings.append(read_page(page))
            finally:
                page.close()
    finally:
        document.close()
    return readings


def _open(path: Path) -> Any:
    import pdfplumber
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
    from pdfplumber.utils.exceptions import PdfminerException

    try:
        # pdfminer tries the empty user password itself, so owner-only protection opens.
        return pdfplumber.open(path)
    except PdfminerException as exc:
        cause = exc.args[0] if exc.args else exc
        if isinstance(cause, PDFPasswordIncorrect | PDFEncryptionError):
            raise password_protected(f"pdfminer: {cause!r}") from exc
        raise corrupt(f"pdfminer: {cause!r}") from exc


class PdfParser(Parser):
    name = "pdfium-layout"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == PDF else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        check_complete(path)
        ocr = Ocr(options)
        readings = _read_pages(path)
        from_pdfminer = _pdfminer_pages(path, readings)
        pages = []
        for index, reading in enumerate(readings):
            words, blocks = from_pdfminer.get(index, (None, []))
            if words is not None:
                reading.words = words
            boxes = words_to_boxes(reading.words)
            boxes = [box for box in boxes if not any(_inside(box, block) for block in blocks)] + blocks
            pages.append(PageLayout(boxes, reading.rules, reading.width, reading.height, reading))
        margins = [margin_lines(page.boxes, page.height) for page in pages]
        repeated = repeated_margin_keys([m for m in margins if m])
        bodies = [strip_margins(page.boxes, margins[i], repeated, len(pages)) for i, page in enumerate(pages)]
        texts = [page_text(bodies[i], page.width, page.rules) for i, page in enumerate(pages)]
        languages = options.ocr_languages
        reasons = {
            i: reason
            for i, page in enumerate(pages)
            if (reason := _ocr_reason(page, bodies[i], texts[i], languages))
        }
        # Pages whose text is garbage and that OCR could not read either: refused, never indexed.
        refused: dict[int, str] = {}
        if reasons and not ocr.available():
            if len(reasons) == len(pages) and all(r == "no text layer" for r in reasons.values()):
                raise scanned_without_ocr(f"{len(reasons)} image-only pages, tesseract not found")
            log.info("%s: %d pages need OCR, skipped: no OCR", filename, len(reasons))
            refused = {i: f"{r}; no OCR" for i, r in reasons.items() if _untrusted(r)}
            reasons = {}
        if len(reasons) > options.ocr_max_pages:
            raise ParseError(
                f"The scanned PDF has {len(reasons)} pages without usable text; text recognition is limited "
                f"to {options.ocr_max_pages} pages per file. Split it into smaller files.",
                f"{len(reasons)} pages need OCR > ocr_max_pages={options.ocr_max_pages}",
                reason="too_large",
                final=True,
            )
        segments = []
        ocr_order = {index: n for n, index in enumerate(sorted(reasons), start=1)}
        for index in range(len(pages)):
            meta: dict = {"page": index + 1}
            if index in refused:
                continue
            if index in reasons:
                report_progress("ocr", ocr_order[index], len(reasons))
                ocr_reading = ocr.page_text(path, index)
                text = ocr_reading.text.strip()
                meta.update(ocr=True, ocr_reason=reasons[index])
                problem = ocr_reading.problem(languages) if text else "no text found"
                if problem and (text or _untrusted(reasons[index])):
                    refused[index] = f"{reasons[index]}; OCR: {problem}"
                    continue
            else:
                text = texts[index]
            if text.strip():
                segments.append(Segment(text, title=f"Page {index + 1}", meta=meta))
        if refused:
            log.warning(
                "%s: pages refused as unreadable: %s",
                filename,
                "; ".join(f"page {i + 1}: {why}" for i, why in sorted(refused.items())),
            )
            if not segments:
                raise garbled_refusal(refused, ocr_available=ocr.available(), languages=languages)
            segments[0].meta["refused_pages"] = {i + 1: why for i, why in sorted(refused.items())}
        if not segments and reasons:
            raise ParseError(
                "Scanned PDF: text recognition found no text on its pages.",
                f"OCR of {len(reasons)} pages returned nothing",
                reason="no_text",
                final=True,
            )
        return segments


class PypdfTextParser(Parser):
    """Plain text with pypdf, for PDFs whose structure pdfminer will not read."""

    name = "pypdf"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 50 if sniffed_type == PDF else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        from pypdf import PdfReader
        from pypdf.errors import FileNotDecryptedError, PdfReadError

        check_complete(path)
        try:
            reader = PdfReader(path)
            if reader.is_encrypted and not reader.decrypt(""):
                raise password_protected("pypdf: empty user password rejected")
            texts = [page.extract_text() or "" for page in reader.pages]
        except FileNotDecryptedError as exc:
            raise password_protected(f"pypdf: {exc}") from exc
        except PdfReadError as exc:
            raise corrupt(f"pypdf: {exc}") from exc
        segments, refused = [], {}
        for index, text in enumerate(texts):
            # pypdf returns whatever code points the fonts give, unmapped glyphs included: control
            # characters and symbols that PDFium would have flagged. Garbage is refused, never indexed.
            unreadable = sum(1 for c in text if not (c.isprintable() or c.isspace()))
            visible = sum(1 for c in text if not c.isspace())
            if unreadable >= MIN_GARBLED and unreadable >= GARBAGE_SHARE * visible:
                refused[index] = f"{GARBLED}: {unreadable} of {visible} characters unprintable"
                continue
            readable = "".join(c if c.isprintable() or c.isspace() else " " for c in text)
            if not readable.strip():
                continue
            if problem := text_problem(readable, options.ocr_languages):
                refused[index] = f"text layer: {problem}"
                continue
            segments.append(Segment(readable.strip(), title=f"Page {index + 1}", meta={"page": index + 1}))
        if refused and not segments:
            raise garbled_refusal(refused, ocr_available=False, languages=options.ocr_languages)
        return segments
