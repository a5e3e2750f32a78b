"""Tesseract on PDF pages rendered by pypdfium2, for scans, text drawn as curves and garbled text layers."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ingestion.parsers.base import ParseError, ParseOptions


def scanned_without_ocr(detail: str) -> ParseError:
    return ParseError(
        "Scanned PDF: no text layer, and text recognition (OCR) is not available on this server. "
        "Upload a PDF with selectable text, or ask an administrator to install Tesseract.",
        detail,
        reason="no_text_layer",
        final=True,
    )


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
