"""PDF: reading order, columns, tables, running headers, encryption, truncation and OCR."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from ingestion.parsers.base import ParseError, ParseOptions
from ingestion.parsers.pdf_text import read_page
from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers import builders
from tests.ingestion.parsers.documents import document, segments, text

document_path = document

SCAN = "pdf/huckfinn-p22-scan-no-text.pdf"


def test_two_column_page_is_read_column_by_column() -> None:
    page_one = segments("pdf/multicolumn-latex.pdf")[0].text
    left_column_end = page_one.index("Vivamus viverra fermentum felis. Donec nonummy")
    right_column_start = page_one.index("pellentesque ante. Phasellus adipiscing semper elit.")
    assert left_column_end < right_column_start
    # Abstract and title come first, above both columns.
    assert page_one.index("Two-Column Document with Lorem Ipsum") < page_one.index("Abstract")


def test_words_hyphenated_at_line_ends_are_joined() -> None:
    # The LaTeX page breaks "adip-iscing" across two lines of the left column.
    assert "consectetuer adipiscing elit. Ut purus elit" in text("pdf/multicolumn-latex.pdf")


def test_three_column_federal_register_keeps_each_column_whole() -> None:
    page_one = segments("pdf/federal-register-2020-17221.pdf")[0].text
    # Consecutive lines of the first and of the second column stay consecutive.
    assert "SUMMARY: The FAA proposes to\nsupersede Airworthiness Directive (AD)" in page_one
    assert "• Mail: U.S. Department of\nTransportation, Docket Operations, M–" in page_one  # noqa: RUF001


def test_running_headers_and_footers_are_not_repeated_into_pages() -> None:
    extracted = text("pdf/federal-register-2020-17221.pdf")
    assert "Federal Register / Vol. 85, No. 152 / Thursday" not in extracted
    assert "VerDate Sep<11>2014" not in extracted
    siege = text("pdf/siege-of-vicksburg-scan-ocr.pdf")
    assert "SIEGE OF VICKSBURG" not in siege.upper()
    assert "JUNE 10TH.—The heat of the sun increases" in siege


def test_pdf_segments_are_pages_with_their_numbers() -> None:
    pages = segments("pdf/siege-of-vicksburg-scan-ocr.pdf")
    assert [segment.meta["page"] for segment in pages] == [1, 2, 3, 4, 5, 6]
    assert pages[0].title == "Page 1"


def test_ruled_table_becomes_markdown_rows() -> None:
    extracted = text("pdf/nics-background-checks-2015-11.pdf")
    # The table is ruled every five states; each state is still its own row.
    assert "| Alaska | 209 | 3,062 | 3,209 | 191 | 184 |" in extracted
    assert "| Wyoming |" in extracted


def test_unruled_results_keep_name_party_and_votes_on_one_line() -> None:
    extracted = text("pdf/la-precinct-bulletin-2014-p1.pdf")
    assert "GOVERNOR\nVOTER NOMINATED\nNEEL KASHKARI REP 247\nEDMUND G BROWN DEM 69" in extracted
    assert "STATE MEASURE 48\nYES 96\nNO 216" in extracted


def test_word_generated_table_keeps_its_rows() -> None:
    extracted = text("pdf/geobase-nhn-data-model-en.pdf")
    assert "| May 2004 | Draft | Update from the March Workshop comments. |" in extracted


def test_truncated_pdf_fails_as_truncated_or_corrupt(tmp_path: Path) -> None:
    data = document("pdf/federal-register-2020-17221.pdf").read_bytes()
    truncated = tmp_path / "upload.pdf"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParseError) as caught:
        parse_file(truncated, "report.pdf")
    assert caught.value.reason == "corrupt"
    assert "truncated or corrupt" in caught.value.message


def _encrypted_copy(tmp_path: Path, user_password: str) -> Path:
    writer = PdfWriter(clone_from=PdfReader(document("pdf/multicolumn-latex.pdf")))
    writer.encrypt(user_password=user_password, owner_password="owner-only-secret", algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    path = tmp_path / "encrypted.pdf"
    path.write_bytes(buffer.getvalue())
    return path


def test_pdf_with_an_empty_user_password_opens(tmp_path: Path) -> None:
    path = _encrypted_copy(tmp_path, user_password="")
    assert "Two-Column Document with Lorem Ipsum" in segments_text(path)


def test_pdf_with_a_user_password_fails_as_password_protected(tmp_path: Path) -> None:
    path = _encrypted_copy(tmp_path, user_password="letmein")
    with pytest.raises(ParseError) as caught:
        parse_file(path, "encrypted.pdf")
    assert caught.value.reason == "password_protected"
    assert "password protected" in caught.value.message


def test_scanned_pdf_without_ocr_fails_with_no_text_layer() -> None:
    options = ParseOptions(tesseract_cmd="/nonexistent/tesseract")
    with pytest.raises(ParseError) as caught:
        parse_file(document(SCAN), "scan.pdf", options=options)
    assert caught.value.reason == "no_text_layer"
    assert "scanned pdf: no text layer" in caught.value.message.lower()
    with pytest.raises(ParseError, match="no text layer"):
        parse_file(document(SCAN), "scan.pdf", options=ParseOptions(ocr_enabled=False))


def test_ocr_language_is_configurable_and_a_missing_one_is_named() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file(document(SCAN), "scan.pdf", options=ParseOptions(ocr_languages="zzz"))
    assert caught.value.reason == "ocr_language_missing"
    assert "zzz" in caught.value.message


def test_ocr_language_defaults_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDED_OCR_LANGUAGES", "eng+fra")
    assert ParseOptions().ocr_languages == "eng+fra"


def test_ocr_is_marked_on_the_pages_it_produced() -> None:
    (page,) = segments(SCAN)
    assert page.meta["ocr"] is True


def test_scans_past_the_ocr_page_limit_are_refused() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file(document(SCAN), "scan.pdf", options=ParseOptions(ocr_max_pages=0))
    assert caught.value.reason == "too_large"


def segments_text(path: Path) -> str:
    return "\n\n".join(segment.text for segment in parse_file(path, path.name))


LEDGER = [
    ("Date", "Description", "Debit", "Balance"),
    ("2024-01-03", "Office supplies from Paper & Co", "120.00", "5,380.00"),
    ("2024-01-05", "Client payment, invoice 118", "", "7,380.00"),
    ("2024-01-09", "Rent for January", "1,500.00", "5,880.00"),
    ("2024-01-12", "Travel to the Lyon trade fair", "310.40", "5,569.60"),
    ("2024-01-15", "Bank charges", "12.00", "5,557.60"),
]


def test_an_unruled_ledger_keeps_each_row_on_one_line(tmp_path: Path) -> None:
    runs = [
        (x, 700 - 18 * row_number, cell)
        for row_number, row in enumerate(LEDGER)
        for x, cell in zip((72, 170, 400, 500), row, strict=True)
        if cell
    ]
    path = tmp_path / "ledger.pdf"
    path.write_bytes(builders.pdf_with_lines([runs]))
    extracted = segments_text(path)
    assert "2024-01-09 Rent for January 1,500.00 5,880.00" in extracted
    assert "2024-01-05 Client payment, invoice 118 7,380.00" in extracted


def test_a_garbled_text_layer_is_detected_and_read_by_ocr(tmp_path: Path) -> None:
    lines = ["Quarterly revenue grew in the northern region.", "Costs fell by four percent."]
    runs = [(72, 700 - 20 * i, line) for i, line in enumerate(lines)]
    path = tmp_path / "garbled.pdf"
    # An embedded font without a ToUnicode map: the text layer holds glyph numbers, not letters.
    path.write_bytes(builders.without_to_unicode(builders.pdf_with_lines([runs], font_path=builders.DEJAVU)))
    (page,) = parse_file(path, "garbled.pdf")
    assert page.meta["ocr_reason"] == "garbled text layer"
    assert "Quarterly revenue grew in the northern region." in page.text


def test_the_same_pdf_with_its_unicode_map_is_read_from_its_text_layer(tmp_path: Path) -> None:
    path = tmp_path / "clean.pdf"
    path.write_bytes(
        builders.pdf_with_lines([[(72, 700, "Costs fell by four percent.")]], font_path=builders.DEJAVU)
    )
    (page,) = parse_file(path, "clean.pdf")
    assert "ocr" not in page.meta
    assert page.text == "Costs fell by four percent."


def test_an_image_only_page_between_text_pages_is_read_by_ocr(tmp_path: Path) -> None:
    path = tmp_path / "mixed.pdf"
    path.write_bytes(
        builders.pdf_with_image_page(
            ["Minutes of the board meeting."],
            ["Appendix: signed budget approval", "for the harbour bridge repairs."],
        )
    )
    first, second = parse_file(path, "mixed.pdf")
    assert first.text == "Minutes of the board meeting." and "ocr" not in first.meta
    assert second.meta["ocr"] is True
    assert "signed budget approval" in second.text


def test_a_figure_page_with_only_running_headers_is_read_by_ocr() -> None:
    # Federal Register p. 8 is a full-page figure under the running header and footer.
    page_eight = next(s for s in segments("pdf/federal-register-2020-17221.pdf") if s.meta["page"] == 8)
    assert page_eight.meta["ocr_reason"] == "image-only page"
    assert len(page_eight.text) > 500


def test_table_finder_runs_only_on_pages_with_a_ruled_grid() -> None:
    import pypdfium2

    document = pypdfium2.PdfDocument(str(document_path("pdf/federal-register-2020-17221.pdf")))
    flagged = [i + 1 for i in range(len(document)) if read_page(document[i]).may_have_ruled_table]
    # Page 6 holds the cost table; the other pages only have the rules around the running header.
    assert flagged == [6]


def test_typewriter_word_spaces_are_not_column_gutters() -> None:
    # The transcript is set in Courier: its 7-point word spaces line up from line to line, and were cut
    # as a gutter through the court's name.
    extracted = text("pdf/scotus-transcript-p1.pdf")
    assert "1 IN THE SUPREME COURT OF THE UNITED STATES" in extracted
    assert "6 v. : No. 07-1315" in extracted


def test_small_labels_of_a_scaled_diagram_and_turned_words_read_whole() -> None:
    # GeoBase's UML diagrams are drawn at half size: their labels' font size is the scaled one, so two
    # labels 6 points apart are two lines, not one of interleaved letters; a turned axis label keeps its
    # spaces.
    extracted = text("pdf/geobase-nhn-data-model-en.pdf")
    assert (
        "«spatialDescriptiveEvol» «spatialDescriptiveEvol»\nNetworkLinearFlow WaterBoundaryEntity"
        in extracted
    )
    assert "Number of characteristics" in extracted


def test_a_descender_does_not_leave_its_line_beside_a_taller_neighbour() -> None:
    # 'y' of "Style" sits lower than the button label beside it; it stays in its word.
    assert "Arrow Style and Size" in text("pdf/pdffill-demo-form.pdf")


def test_a_caption_beside_a_picture_is_read_whole_and_apart_from_the_body() -> None:
    # Page 3 of the scanned book: the text runs the full width, then beside a picture whose caption's
    # OCR lines overlap and stand 4 points from the body; the caption's lines were read into the body's.
    extracted = text("pdf/siege-of-vicksburg-scan-ocr.pdf")
    caption = "Cannister shot is a tin cylinder with\niron heads, filled with balls packed\nwith saw-dust."
    assert caption in extracted
    assert "It stands on a hill, and seems to be the target for many cannon." in extracted
    assert "be made and the Southern confederacy will be crushed forever." in extracted


def test_a_label_set_at_a_slant_is_read_as_a_word() -> None:
    # The form's page of rotated text draws "Rotation" at 45 degrees: each letter's top steps down from
    # the last, and grouping by top read one letter a line ("R", "o", "t", ...).
    extracted = text("pdf/pdffill-demo-form.pdf")
    assert extracted.count("Rotation") == 3
