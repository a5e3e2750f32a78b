"""XLSX: rows as `column: value`, headers under title rows, dates, merges, inline strings, hidden sheets."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import openpyxl

from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers.documents import segments


def _workbook_file(tmp_path: Path, workbook: openpyxl.Workbook) -> Path:
    path = tmp_path / "book.xlsx"
    workbook.save(path)
    return path


def test_header_is_found_under_title_rows_and_titles_are_kept_once() -> None:
    arts = [
        segment for segment in segments("xlsx/readxl-deaths-messy-layout.xlsx") if segment.title == "arts"
    ]
    assert arts[0].text.startswith("Lots of people\nsimply cannot resist writing")
    bowie = arts[1]
    assert bowie.meta["row"] == 6
    assert bowie.text == (
        "Name: David Bowie | Profession: musician | Age: 69 | Has kids: TRUE | "
        "Date of birth: 1947-01-08 | Date of death: 2016-01-10"
    )


def test_every_visible_sheet_is_read() -> None:
    sheets = {segment.meta["sheet"] for segment in segments("xlsx/readxl-type-me.xlsx")}
    assert sheets == {"logical_coercion", "numeric_coercion", "date_coercion", "text_coercion"}


def test_hidden_and_very_hidden_sheets_are_skipped(tmp_path: Path) -> None:
    assert {s.meta["sheet"] for s in segments("xlsx/hidden-sheets.xlsx")} == {"Visible"}
    workbook = openpyxl.Workbook()
    workbook.active.title = "Prices"
    workbook.active.append(["Item", "Price"])
    workbook.active.append(["Tea", 3.5])
    hidden = workbook.create_sheet("Payroll")
    hidden.append(["secret salary", 99_000])
    hidden.sheet_state = "hidden"
    very_hidden = workbook.create_sheet("Lookups")
    very_hidden.append(["internal code", 7])
    very_hidden.sheet_state = "veryHidden"
    parsed = parse_file(_workbook_file(tmp_path, workbook), "book.xlsx")
    assert [segment.text for segment in parsed] == ["Item: Tea | Price: 3.5"]


def test_dates_in_both_date_systems(tmp_path: Path) -> None:
    assert "A: 2021-01-02 | B: 16" in [s.text for s in segments("xlsx/date-1904.xlsx")]
    workbook = openpyxl.Workbook()
    workbook.active.append(["Event", "When"])
    workbook.active.append(["Launch", dt.datetime(1999, 12, 31, 23, 59)])
    workbook.active.append(["Review", dt.date(2024, 2, 29)])
    parsed = parse_file(_workbook_file(tmp_path, workbook), "book.xlsx")
    assert [segment.text for segment in parsed] == [
        "Event: Launch | When: 1999-12-31 23:59",
        "Event: Review | When: 2024-02-29",
    ]


def test_merged_values_fill_every_cell_of_their_range() -> None:
    sheet_two = [s.text for s in segments("xlsx/merged-range-two-sheets.xlsx") if s.meta["sheet"] == "Sheet2"]
    # A1:A4 and F1:H4 are merged: every row carries their values.
    assert all(row.startswith("A: A1 |") and row.endswith("F: F1 | G: F1 | H: F1") for row in sheet_two)


def test_inline_strings_are_read(tmp_path: Path) -> None:
    path = tmp_path / "inline.xlsx"
    path.write_bytes(_inline_string_workbook())
    assert [segment.text for segment in parse_file(path, "inline.xlsx")] == ["City: Lyon | Visitors: 12"]


def _inline_string_workbook() -> bytes:
    """A minimal workbook whose text cells are inline (t="inlineStr"), as many exporters write them."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            "</Types>"
        ),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>"
        ),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" xmlns:r="{rel}">'
            '<sheets><sheet name="Visits" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
            "</Relationships>"
        ),
        "xl/worksheets/sheet1.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}"><sheetData>'
            '<row r="1"><c r="A1" t="inlineStr"><is><t>City</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>Visitors</t></is></c></row>'
            '<row r="2"><c r="A2" t="inlineStr"><is><t>Lyon</t></is></c><c r="B2"><v>12</v></c></row>'
            "</sheetData></worksheet>"
        ),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in parts.items():
            archive.writestr(name, content)
    return buffer.getvalue()
