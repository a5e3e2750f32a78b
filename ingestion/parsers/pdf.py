"""PDF: reading-ordered text from pypdfium2, ruled tables from pdfplumber, unreadable pages through OCR.

Every page's words come from PDFium (pypdfium2), an order of magnitude faster than pdfminer, and go
through the same reading-order code (`pdf_layout`: columns, running headers, hyphenation). pdfplumber's
table finder runs only on pages whose drawn lines close a grid (`pdf_text.ruled_cell`), since only there
can it find a table. Pages without usable text (a scan, text drawn as curves, a font without a Unicode
map, a full-page image between text pages) are rendered and read by Tesseract. pypdf stays as the
fallback reader for files PDFium will not open.
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
from ingestion.parsers.pdf_text import IMAGE_PAGE_COVER, PageReading, read_page
from ingestion.parsers.tables import markdown_table

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
    result = []
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


def _ocr_reason(page: PageLayout, body: list[Box]) -> str | None:
    """Why the page must be read from its image, or None when its text layer will do."""
    reading = page.reading
    if reading.text_is_garbage:
        return "garbled text layer"
    if not page.boxes:
        return "no text layer" if reading.drawn else None
    body_chars = sum(len(box.text) for box in body if not box.block)
    if body_chars < MIN_BODY_CHARS and reading.image_cover >= IMAGE_PAGE_COVER:
        return "image-only page"
    return None


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
        reasons = {i: reason for i, page in enumerate(pages) if (reason := _ocr_reason(page, bodies[i]))}
        if reasons and not ocr.available():
            if len(reasons) == len(pages) and all(r == "no text layer" for r in reasons.values()):
                raise scanned_without_ocr(f"{len(reasons)} image-only pages, tesseract not found")
            log.info("%s: %d pages need OCR, skipped: no OCR", filename, len(reasons))
            # A garbled text layer is still better than nothing; image-only pages have nothing to give.
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
        for index, page in enumerate(pages):
            meta: dict = {"page": index + 1}
            if index in reasons:
                report_progress("ocr", ocr_order[index], len(reasons))
                text = ocr.page_text(path, index).strip()
                meta.update(ocr=True, ocr_reason=reasons[index])
            else:
                text = page_text(bodies[index], page.width, page.rules)
            if text.strip():
                segments.append(Segment(text, title=f"Page {index + 1}", meta=meta))
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
        return [
            Segment(text.strip(), title=f"Page {i + 1}", meta={"page": i + 1})
            for i, text in enumerate(texts)
            if text.strip()
        ]
