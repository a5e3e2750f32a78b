"""Tesseract on PDF pages rendered by pypdfium2, for scans, text drawn as curves and garbled text layers.

A page scanned sideways or upside down reads as nonsense; when the first reading does not read as text
(`text_check`), Tesseract's orientation detection (OSD, the `osd` traineddata from tesseract-ocr-osd)
says how the page is turned, and the page is read again turned upright. Upright pages, the usual case,
pay for one reading only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion.parsers.base import ParseError, ParseOptions
from ingestion.parsers.text_check import text_problem

# Below this confidence Tesseract's orientation guess is noise (it reports ~0.5 on pages of few words).
MIN_ORIENTATION_CONFIDENCE = 1.5
# Below this mean word confidence a reading is not text (measured: 91-97 on the shared scans and on a
# clean page, 30 on the same page read upside down, 37 on Chinese read with English only).
MIN_CONFIDENCE = 50.0
TRUSTED_CONFIDENCE = 80.0


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
    """Tesseract's OpenMP threads fight over two cores and make it far slower a page
    (docs/BENCHMARKS.md). pytesseract passes no environment of its own, so the variable is set around
    the call."""
    if "OMP_THREAD_LIMIT" in os.environ:
        yield
        return
    os.environ["OMP_THREAD_LIMIT"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OMP_THREAD_LIMIT", None)


@dataclass(frozen=True)
class OcrReading:
    text: str
    # Tesseract's confidence in its words, 0-100, weighted by their length: ~90 on a clean scan, ~30
    # on a page read sideways or upside down or in a script whose language is not installed.
    confidence: float

    def problem(self, languages: str) -> str | None:
        """Why the reading is not text, or None. Tesseract reads with a language model, so a confident
        reading is text even where our word test has doubts (a list of names in capitals)."""
        if self.text.strip() and self.confidence < MIN_CONFIDENCE:
            return f"recognised with {self.confidence:.0f}% confidence"
        return None if self.confidence >= TRUSTED_CONFIDENCE else text_problem(self.text, languages)


def _mean_confidence(table: str) -> float:
    """Length-weighted mean confidence of the words in Tesseract's TSV output."""
    total = weight = 0.0
    for line in table.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) != 12 or not fields[11].strip():
            continue
        try:
            confidence = float(fields[10])
        except ValueError:
            continue
        if confidence >= 0:
            total += confidence * len(fields[11])
            weight += len(fields[11])
    return total / weight if weight else 0.0


class Ocr:
    """Tesseract through pytesseract, on pages rendered by pypdfium2."""

    def __init__(self, options: ParseOptions) -> None:
        self.options = options

    def available(self) -> bool:
        return self.options.ocr_enabled and shutil.which(self.options.tesseract_cmd) is not None

    def page_text(self, path: Path, page_index: int) -> OcrReading:
        import pypdfium2

        document = pypdfium2.PdfDocument(str(path))
        try:
            # Rendering applies the page's /Rotate, so the image is the page as a viewer shows it.
            image = document[page_index].render(scale=self.options.ocr_dpi / 72).to_pil()
        finally:
            document.close()
        reading = self._read(image)
        if not reading.text.strip() or reading.problem(self.options.ocr_languages) is None:
            return reading
        turn = self.orientation(image)
        if not turn:
            return reading
        turned = self._read(image.rotate(-turn, expand=True))
        return max(reading, turned, key=lambda r: r.confidence)

    def orientation(self, image: Any) -> int:
        """Degrees clockwise that turn the page upright (0, 90, 180 or 270), from Tesseract's OSD; 0 when
        it cannot tell (too few characters, no osd traineddata)."""
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = self.options.tesseract_cmd
        try:
            with _one_openmp_thread():
                found = pytesseract.image_to_osd(image, output_type=pytesseract.Output.DICT)
        except pytesseract.TesseractError:
            return 0
        if float(found.get("orientation_conf", 0)) < MIN_ORIENTATION_CONFIDENCE:
            return 0
        return int(found.get("rotate", 0)) % 360

    def _read(self, image: Any) -> OcrReading:
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = self.options.tesseract_cmd
        try:
            with _one_openmp_thread():
                # One run gives the text and, in the TSV, each word's confidence.
                text, table = pytesseract.run_and_get_multiple_output(
                    image, extensions=["txt", "tsv"], lang=self.options.ocr_languages
                )
            return OcrReading(text, _mean_confidence(table))
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
