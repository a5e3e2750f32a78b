"""XLSX: rows as `column: value`, headers under title rows, dates, merges, inline strings, hidden sheets."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import openpyxl
import pytest

from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers.builders import inline_string_xlsx, rich_text_xlsx
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
    path.write_bytes(inline_string_xlsx())
    assert [segment.text for segment in parse_file(path, "inline.xlsx")] == ["City: Lyon | Visitors: 12"]


def test_a_workbook_declaring_a_shared_strings_part_it_never_wrote_is_read_by_calamine(
    tmp_path: Path,
) -> None:
    data = inline_string_xlsx(declare_shared_strings=True)
    # The fixture is one openpyxl can't open: its content types promise xl/sharedStrings.xml.
    with pytest.raises(KeyError, match="sharedStrings"):
        openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    path = tmp_path / "export.xlsx"
    path.write_bytes(data)
    parsed = parse_file(path, "export.xlsx")
    assert [segment.text for segment in parsed] == ["City: Lyon | Visitors: 12"]
    assert parsed[0].meta["parser"] == "calamine" and parsed[0].meta["sheet"] == "Visits"


def test_a_form_of_merged_cells_reads_as_labels_and_answers(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Claim"
    sheet["A1"] = "Travel expense claim"
    sheet.merge_cells("A1:F1")
    for row, (label, answer) in enumerate(
        [("Employee name", "Maria Lopez"), ("Department", "Field work")], 3
    ):
        sheet[f"A{row}"], sheet[f"C{row}"] = label, answer
        sheet.merge_cells(f"A{row}:B{row}")
        sheet.merge_cells(f"C{row}:F{row}")
    sheet["A6"] = "Commissioning the pumping station at Lyon and training its operators."
    sheet.merge_cells("A6:F8")
    parsed = parse_file(_workbook_file(tmp_path, workbook), "claim.xlsx")
    assert [segment.text for segment in parsed] == [
        "Travel expense claim\nEmployee name: Maria Lopez\nDepartment: Field work\n"
        "Commissioning the pumping station at Lyon and training its operators."
    ]


def test_two_header_rows_are_merged_into_each_columns_name(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Quarterly sales"])
    sheet.append(["Region", 2023, None, 2024, None])
    sheet.merge_cells("B2:C2")
    sheet.merge_cells("D2:E2")
    sheet.append([None, "Units", "Revenue", "Units", "Revenue"])
    sheet.append(["North", 120, 3400.5, 150, 4100])
    parsed = parse_file(_workbook_file(tmp_path, workbook), "sales.xlsx")
    assert [segment.text for segment in parsed] == [
        "Quarterly sales",
        "Region: North | 2023 Units: 120 | 2023 Revenue: 3400.5 | 2024 Units: 150 | 2024 Revenue: 4100",
    ]


@pytest.mark.parametrize("declare_shared_strings", [False, True], ids=["openpyxl", "calamine"])
def test_inline_rich_text_runs_keep_their_text_exactly(tmp_path: Path, declare_shared_strings: bool) -> None:
    """Class (#52): inline rich-text strings. calamine (the reader when openpyxl refuses the file, here
    for a declared shared-strings part that was never written) trimmed each run, so "Regular" + " Bold"
    became "RegularBold"; the runs are now read from the sheet's XML as written."""
    path = tmp_path / "styles.xlsx"
    path.write_bytes(rich_text_xlsx(declare_shared_strings=declare_shared_strings))
    parsed = parse_file(path, "styles.xlsx")
    assert parsed[0].meta["parser"] == ("calamine" if declare_shared_strings else "openpyxl")
    assert [segment.text for segment in parsed] == [
        "Style: Regular Bold | Count: 3",
        "Style: Italic then plain | Count: 4",
    ]
