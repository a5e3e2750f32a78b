"""Issue #52, files: turned pages read in reading order, text layers that are garbage sent to OCR (turned
scans set upright first), and pages that stay garbage refused with the reason instead of indexed.

Every PDF here is made by the test (tests/ingestion/parsers/builders.py), so each shows one class.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingestion.parsers.base import ParseError, ParseOptions
from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers import builders

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
NO_OCR = ParseOptions(ocr_enabled=False)

LEDGER = [
    ("2023-01-05", "Acme Fuel Supply", "Fuel", "37.25"),
    ("2023-01-09", "Harbor Tire Works", "Repairs", "412.00"),
    ("2023-01-12", "Bluebird Insurance", "Insurance", "1,210.50"),
    ("2023-01-17", "City Parking Authority", "Parking", "64.00"),
    ("2023-01-23", "Delta Office Goods", "Office", "118.90"),
]
MEMO = [
    "Quarterly maintenance memo",
    "The fleet inspection found worn brake pads on four of the",
    "delivery vans. Replacement parts were ordered from the usual",
    "supplier and should arrive by the end of next week.",
]


def _ledger_pdf(turn: int) -> bytes:
    runs = [(60, 560, "NORTHWIND TRANSPORTATION EXPENSE LEDGER 2023"), (60, 530, "Date"), (160, 530, "Payee")]
    runs += [(420, 530, "Category"), (600, 530, "Amount")]
    for number, row in enumerate(LEDGER):
        runs += [(x, 510 - 14 * number, cell) for x, cell in zip((60, 160, 420, 600), row, strict=True)]
    # A filing stamp along the paper's edge, unturned: with it, the old reader kept the turned text as
    # columns of reversed words ("NOITATROPSNART") and lost the rows.
    stamps = [(40, 20, "Filed by accounts payable, batch 2023-114, copy for the auditors")]
    return builders.pdf_with_turned_page(runs, turn=turn, stamps=stamps)


@pytest.mark.parametrize("turn", [1, 2, 3])
def test_turned_landscape_ledger_reads_row_by_row_with_cells_in_order(tmp_path: Path, turn: int) -> None:
    """Class: a page drawn turned (a landscape ledger shown upright through /Rotate)."""
    path = tmp_path / "ledger.pdf"
    path.write_bytes(_ledger_pdf(turn))
    (page,) = parse_file(path, "ledger.pdf", options=NO_OCR)
    lines = page.text.splitlines()
    assert "NORTHWIND TRANSPORTATION EXPENSE LEDGER 2023" in lines
    assert "Date Payee Category Amount" in lines
    for row in LEDGER:
        assert " ".join(row) in lines
    assert lines.index("2023-01-05 Acme Fuel Supply Fuel 37.25") < lines.index(
        "2023-01-23 Delta Office Goods Office 118.90"
    )
    assert "NOITATROPSNART" not in page.text and "ocr" not in page.meta


def test_short_page_in_a_font_without_unicode_map_is_read_by_ocr(tmp_path: Path) -> None:
    """Class: an embedded TrueType font without ToUnicode, on a page too short for the old 20-character
    threshold: it was indexed as a few characters of garbage by the pypdf fallback."""
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed")
    path = tmp_path / "receipt.pdf"
    runs = [(72, 700, "Invoice 4471 paid")]
    path.write_bytes(builders.without_to_unicode(builders.pdf_with_lines([runs], font_path=builders.DEJAVU)))
    (page,) = parse_file(path, "receipt.pdf")
    assert page.meta["ocr_reason"] == "garbled text layer"
    assert page.text == "Invoice 4471 paid"


def test_font_without_unicode_map_is_refused_when_ocr_is_off(tmp_path: Path) -> None:
    """Class: the same garbled text layer with no OCR to fall back on is refused, never indexed."""
    path = tmp_path / "receipt.pdf"
    runs = [(72, 700, "Invoice 4471 paid")]
    path.write_bytes(builders.without_to_unicode(builders.pdf_with_lines([runs], font_path=builders.DEJAVU)))
    with pytest.raises(ParseError) as caught:
        parse_file(path, "receipt.pdf", options=NO_OCR)
    assert caught.value.reason == "garbled_text"
    assert "garbled" in caught.value.message and "OCR" in caught.value.message
    assert "page 1: garbled text layer" in caught.value.detail


@needs_tesseract
def test_text_layer_of_glyph_numbers_does_not_read_as_words_and_is_ocred(tmp_path: Path) -> None:
    """Class: a Unicode map that gives glyph numbers ("4XDUWHUO" for "Quarterly"): printable characters
    that no glyph check flags, caught by the share of words in the page's language."""
    path = tmp_path / "memo.pdf"
    runs = [(72, 700 - 20 * i, line) for i, line in enumerate(MEMO)]
    pdf = builders.pdf_with_lines([runs], font_path=builders.DEJAVU)
    path.write_bytes(builders.with_glyph_ids_as_unicode(pdf))
    (page,) = parse_file(path, "memo.pdf")
    assert page.meta["ocr_reason"] == "text layer: its words are not words of any language"
    assert "The fleet inspection found worn brake pads" in page.text
    assert "4XDUWHUO" not in page.text


@needs_tesseract
def test_garbled_text_layer_with_nothing_to_recognise_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Class: a page that still reads as garbage after OCR (an invisible garbled text layer, no image)."""
    path = tmp_path / "invisible.pdf"
    path.write_bytes(builders.pdf_with_invisible_text(MEMO))
    with pytest.raises(ParseError) as caught:
        parse_file(path, "invisible.pdf")
    assert caught.value.reason == "garbled_text"
    assert "page 1: garbled text layer; OCR: no text found" in caught.value.detail


@needs_tesseract
@pytest.mark.parametrize("degrees", [90, 180])
def test_scan_fed_in_turned_is_set_upright_before_ocr(tmp_path: Path, degrees: int) -> None:
    """Class: a scanned page turned sideways or upside down; Tesseract's orientation detection turns it."""
    path = tmp_path / "scan.pdf"
    path.write_bytes(builders.pdf_with_scan(MEMO, degrees=degrees))
    (page,) = parse_file(path, "scan.pdf")
    assert page.meta["ocr"] is True
    assert "The fleet inspection found worn brake pads" in page.text


def test_pypdf_fallback_refuses_control_character_garbage(tmp_path: Path) -> None:
    """The fallback reader gives unmapped glyphs as control characters; it refuses them too."""
    from ingestion.parsers.pdf import PypdfTextParser

    path = tmp_path / "receipt.pdf"
    runs = [(72, 700, "Invoice 4471 paid")]
    path.write_bytes(builders.without_to_unicode(builders.pdf_with_lines([runs], font_path=builders.DEJAVU)))
    with pytest.raises(ParseError) as caught:
        PypdfTextParser().parse(path, "receipt.pdf", NO_OCR)
    assert caught.value.reason == "garbled_text"
