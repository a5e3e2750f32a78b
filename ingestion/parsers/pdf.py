"""PDF: text in reading order with pdfplumber, ruled tables as Markdown, scanned pages through Tesseract.

pdfplumber (on pdfminer.six) is chosen because it gives every word with its position and finds ruled
tables, which is what reading order, column detection and header removal need; its pypdfium2 dependency
renders pages for OCR. pypdf stays as the fallback reader for files pdfminer chokes on.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
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
from ingestion.parsers.tables import markdown_table

log = logging.getLogger(__name__)

PDF = "application/pdf"
# A table whose cells hold more lines than this on average is a page frame around columns, not data.
MAX_TABLE_CELL_LINES = 4


@dataclass
class PageLayout:
    boxes: list[Box]
    rules: list[Rule]
    needs_ocr: bool
    width: float
    height: float


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


def scanned_without_ocr(detail: str) -> ParseError:
    return ParseError(
        "Scanned PDF: no text layer, and text recognition (OCR) is not available on this server. "
        "Upload a PDF with selectable text, or ask an administrator to install Tesseract.",
        detail,
        reason="no_text_layer",
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


def _vertical_rules(page: Any) -> list[Rule]:
    return [
        Rule(edge["x0"], edge["top"], edge["bottom"])
        for edge in page.edges
        if edge["orientation"] == "v" and edge["bottom"] - edge["top"] > 30
    ]


def _page_boxes(page: Any) -> tuple[list[Box], list[Rule], bool]:
    """(boxes, rules, needs_ocr): words outside tables plus table blocks, the vertical rules that
    separate columns, and whether the page is drawn without any text (a scan, or text as curves)."""
    words = page.extract_words(x_tolerance=1.5, y_tolerance=3, keep_blank_chars=False)
    boxes = words_to_boxes(words)
    if not boxes:
        drawn = bool(page.images or page.curves or page.rects or page.lines)
        return [], [], drawn
    tables = _tables(page)
    boxes = [box for box in boxes if not any(_inside(box, table) for table in tables)]
    return boxes + tables, _vertical_rules(page), False


@contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """Tesseract's OpenMP threads make it ten times slower on two cores (measured: 15 s against 1.6 s a
    page). pytesseract passes no environment of its own, so the variable is set around the call."""
    if "OMP_THREAD_LIMIT" in os.environ:
        yield
        return
    os.environ["OMP_THREAD_LIMIT"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OMP_THREAD_LIMIT", None)


class Ocr:
    """Tesseract through pytesseract, on pages rendered by pypdfium2."""

    def __init__(self, options: ParseOptions) -> None:
        self.options = options

    def available(self) -> bool:
        return self.options.ocr_enabled and shutil.which(self.options.tesseract_cmd) is not None

    def page_text(self, path: Path, page_index: int) -> str:
        import pypdfium2
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = self.options.tesseract_cmd
        document = pypdfium2.PdfDocument(str(path))
        try:
            image = document[page_index].render(scale=self.options.ocr_dpi / 72).to_pil()
        finally:
            document.close()
        try:
            with _one_openmp_thread():
                return pytesseract.image_to_string(image, lang=self.options.ocr_languages)
        except pytesseract.TesseractError as exc:
            if "Failed loading language" in str(exc) or "data file" in str(exc):
                raise ParseError(
                    "Scanned PDF: text recognition for the configured language "
                    f"({self.options.ocr_languages}) is not installed on this server.",
                    f"tesseract: {exc}",
                    reason="ocr_language_missing",
                    final=True,
                ) from exc
            raise


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
    name = "pdfplumber"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == PDF else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        check_complete(path)
        ocr = Ocr(options)
        pdf = _open(path)
        with pdf:
            pages = []
            for page in pdf.pages:
                boxes, rules, needs_ocr = _page_boxes(page)
                pages.append(PageLayout(boxes, rules, needs_ocr, float(page.width), float(page.height)))
                page.close()  # pdfplumber caches every object of a page; a long PDF would pile them up
        scanned = [i for i, page in enumerate(pages) if page.needs_ocr]
        with_text = [i for i, page in enumerate(pages) if page.boxes]
        if scanned and not ocr.available():
            if not with_text:
                raise scanned_without_ocr(f"{len(scanned)} image-only pages, tesseract not found")
            log.info("%s: %d image-only pages skipped, no OCR", filename, len(scanned))
            scanned = []
        if len(scanned) > options.ocr_max_pages:
            raise ParseError(
                f"The scanned PDF has {len(scanned)} pages without text; text recognition is limited to "
                f"{options.ocr_max_pages} pages per file. Split it into smaller files.",
                f"{len(scanned)} pages need OCR > ocr_max_pages={options.ocr_max_pages}",
                reason="too_large",
                final=True,
            )
        margins = [margin_lines(page.boxes, page.height) for page in pages]
        repeated = repeated_margin_keys([m for m in margins if m])
        segments = []
        for index, page in enumerate(pages):
            meta: dict = {"page": index + 1}
            if index in scanned:
                text = ocr.page_text(path, index).strip()
                meta["ocr"] = True
            else:
                kept = strip_margins(page.boxes, margins[index], repeated, len(pages))
                text = page_text(kept, page.width, page.rules)
            if text.strip():
                segments.append(Segment(text, title=f"Page {index + 1}", meta=meta))
        if not segments and scanned:
            raise ParseError(
                "Scanned PDF: text recognition found no text on its pages.",
                f"OCR of {len(scanned)} pages returned nothing",
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
