"""XLSX: every visible sheet, one segment per row as `column: value | column: value`.

openpyxl in read-only mode streams rows instead of building the whole workbook in memory. It returns dates
already converted under the workbook's own date system (1900 or 1904). Read-only mode does not report
merged ranges, so they are read from each sheet's <mergeCells> with a streaming defusedxml pass, and a
merged value is repeated into every cell of its range so each row reads whole.
"""

from __future__ import annotations

import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ingestion.parsers.base import ParseOptions, Parser, Segment, corrupt
from ingestion.parsers.ooxml import open_package
from ingestion.parsers.safety import check_office_zip
from ingestion.parsers.tables import HEADER_SEARCH_ROWS, rows_to_segments

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
SHEET_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
# Past this, a "sheet" is formatting applied to whole columns, not data: stop reading it.
MAX_COLUMNS = 1000


def merged_ranges(archive: zipfile.ZipFile, sheet_path: str) -> list[tuple[int, int, int, int]]:
    """(min_row, min_col, max_row, max_col), 1-based, for each merged range of the sheet."""
    from defusedxml.ElementTree import iterparse
    from openpyxl.utils.cell import range_boundaries

    ranges = []
    with archive.open(sheet_path.lstrip("/")) as stream:
        for _, element in iterparse(stream, forbid_dtd=True):
            if element.tag == SHEET_NS + "mergeCell":
                min_col, min_row, max_col, max_row = range_boundaries(element.get("ref", ""))
                # A merged range names its corners (A1:B2), so none of them is None.
                ranges.append(cast("tuple[int, int, int, int]", (min_row, min_col, max_row, max_col)))
            elif element.tag == SHEET_NS + "row":
                element.clear()  # rows are read by openpyxl; only the merge list matters here
    return ranges


def fill_merged(rows: dict[int, list[Any]], ranges: list[tuple[int, int, int, int]]) -> None:
    for min_row, min_col, max_row, max_col in ranges:
        top_left = rows.get(min_row, [])
        value = top_left[min_col - 1] if min_col - 1 < len(top_left) else None
        if value in (None, ""):
            continue
        for row_number in range(min_row, min(max_row, min_row + 10_000) + 1):
            row = rows.setdefault(row_number, [])
            if len(row) < max_col:
                row.extend([None] * (max_col - len(row)))
            for column in range(min_col - 1, min(max_col, MAX_COLUMNS)):
                row[column] = value


def _all_bold(cells: list[Any]) -> bool:
    filled = [cell for cell in cells if getattr(cell, "value", None) not in (None, "")]
    return bool(filled) and all(getattr(getattr(cell, "font", None), "b", False) for cell in filled)


def sheet_segments(worksheet: Any, archive: zipfile.ZipFile | None) -> list[Segment]:
    rows: dict[int, list[Any]] = {}
    bold_by_row: dict[int, bool] = {}
    for index, cells in enumerate(worksheet.iter_rows(max_col=MAX_COLUMNS)):
        values = [cell.value for cell in cells]
        if not any(value not in (None, "") for value in values):
            continue
        row_number = getattr(cells[0], "row", None) or index + 1
        rows[row_number] = values
        if len(bold_by_row) < HEADER_SEARCH_ROWS:
            bold_by_row[row_number] = _all_bold(list(cells))
    raw = {number: list(values) for number, values in rows.items()}
    if archive is not None and getattr(worksheet, "_worksheet_path", None):
        fill_merged(rows, merged_ranges(archive, worksheet._worksheet_path))
    numbers = sorted(rows)
    return rows_to_segments(
        [rows[n] for n in numbers],
        title=worksheet.title,
        meta={"sheet": worksheet.title},
        row_numbers=numbers,
        bold=[bold_by_row.get(n, False) for n in numbers],
        raw_rows=[raw.get(n, []) for n in numbers],
    )


class XlsxParser(Parser):
    name = "openpyxl"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == XLSX else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        import openpyxl
        from openpyxl.utils.exceptions import InvalidFileException

        check_office_zip(path)
        source = open_package(path)
        # A file object, not a path: openpyxl refuses paths whose extension is not .xlsx, and stored
        # uploads are named by us, not by the uploader.
        stream = source.open("rb") if isinstance(source, Path) else source
        try:
            with warnings.catch_warnings():
                # "no default style" and similar notes about the file's styling: nothing for us to do.
                warnings.simplefilter("ignore")
                workbook = openpyxl.load_workbook(stream, read_only=True, data_only=True)
        except (InvalidFileException, KeyError, ValueError, zipfile.BadZipFile, TypeError) as exc:
            stream.close()
            raise corrupt(f"openpyxl: {exc!r}") from exc
        try:
            archive = getattr(workbook, "_archive", None)
            segments = []
            for worksheet in workbook.worksheets:
                if worksheet.sheet_state != "visible":
                    continue  # hidden sheets hold lookups and scratch work the author chose not to show
                segments.extend(sheet_segments(worksheet, archive))
            return segments
        finally:
            workbook.close()
            stream.close()


class CalamineXlsxParser(Parser):
    """The next reader when openpyxl gives up: python-calamine (Rust) reads what some exporters write and
    openpyxl refuses, such as a workbook whose content types declare a shared-strings part it never wrote
    (its strings are inline). Values only: no bold headers; merged ranges, and text cells exactly as
    written (calamine trims rich-text runs), from the sheet's own XML."""

    name = "calamine"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 50 if sniffed_type == XLSX else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        from python_calamine import CalamineWorkbook, SheetVisibleEnum

        check_office_zip(path)
        try:
            workbook = CalamineWorkbook.from_path(str(path))
        except Exception as exc:  # calamine raises its own error types for every kind of bad file
            raise corrupt(f"calamine: {exc!r}") from exc
        segments: list[Segment] = []
        with zipfile.ZipFile(path) as archive:
            sheet_paths = _sheet_paths(archive)
            shared = shared_strings(archive)
            for metadata in workbook.sheets_metadata:
                if metadata.visible != SheetVisibleEnum.Visible:
                    continue
                values = workbook.get_sheet_by_name(metadata.name).to_python(skip_empty_area=False)
                rows = {
                    number: [_plain(value) for value in row[:MAX_COLUMNS]]
                    for number, row in enumerate(values, start=1)
                    if any(value not in (None, "") for value in row)
                }
                if metadata.name in sheet_paths:
                    _put_exact_strings(rows, cell_strings(archive, sheet_paths[metadata.name], shared))
                raw = {number: list(row) for number, row in rows.items()}
                if metadata.name in sheet_paths:
                    fill_merged(rows, merged_ranges(archive, sheet_paths[metadata.name]))
                numbers = sorted(rows)
                segments.extend(
                    rows_to_segments(
                        [rows[n] for n in numbers],
                        title=metadata.name,
                        meta={"sheet": metadata.name},
                        row_numbers=numbers,
                        bold=[False] * len(numbers),
                        raw_rows=[raw.get(n, []) for n in numbers],
                    )
                )
        return segments


def _plain(value: Any) -> Any:
    # calamine gives every number as a float; a whole number reads as one (12, not 12.0), as from openpyxl.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return None if value == "" else value


def _sheet_paths(archive: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name -> its part in the archive, from workbook.xml and its relationships."""
    from defusedxml.ElementTree import fromstring

    relationships = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
    try:
        workbook = fromstring(archive.read("xl/workbook.xml"))
        rels = fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, SyntaxError):
        return {}
    targets = {}
    for rel in rels:
        target = rel.get("Target", "")
        targets[rel.get("Id")] = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
    return {
        sheet.get("name", ""): targets[sheet.get(relationships)]
        for sheet in workbook.iter(SHEET_NS + "sheet")
        if sheet.get(relationships) in targets
    }


def rich_text(element: Any) -> str:
    """The text of a string item (<si>) or an inline string (<is>) exactly as written: plain <t>, or the
    <t> of each rich-text run <r> joined as they are, spaces at run edges kept ("Regular" + " Bold"),
    phonetic guides (<rPh>) left out."""
    parts = []
    for child in element:
        if child.tag == SHEET_NS + "t":
            parts.append(child.text or "")
        elif child.tag == SHEET_NS + "r":
            parts.extend(t.text or "" for t in child.iter(SHEET_NS + "t"))
    return "".join(parts)


def shared_strings(archive: zipfile.ZipFile) -> list[str]:
    """The workbook's shared strings, exactly as written, streamed."""
    from defusedxml.ElementTree import iterparse

    name = _shared_strings_path(archive)
    if name is None:
        return []
    strings = []
    with archive.open(name) as stream:
        for _, element in iterparse(stream, forbid_dtd=True):
            if element.tag == SHEET_NS + "si":
                strings.append(rich_text(element))
                element.clear()
    return strings


def cell_strings(archive: zipfile.ZipFile, sheet_path: str, shared: list[str]) -> dict[tuple[int, int], str]:
    """(row, column), 1-based -> the text of each text cell (shared or inline) exactly as written.

    calamine trims the spaces at the edges of rich-text runs that carry no xml:space="preserve", so
    "Regular" + " Bold" came out as "RegularBold"; Excel and openpyxl keep them."""
    from defusedxml.ElementTree import iterparse
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    found: dict[tuple[int, int], str] = {}
    row_number, column = 0, 0
    with archive.open(sheet_path.lstrip("/")) as stream:
        for event, element in iterparse(stream, events=("start", "end"), forbid_dtd=True):
            if event == "start" and element.tag == SHEET_NS + "row":
                row_number, column = int(element.get("r") or row_number + 1), 0
            elif event == "start" and element.tag == SHEET_NS + "c":
                # A cell's reference is optional: without one, the cell follows the one before.
                reference = element.get("r")
                letters = coordinate_from_string(reference)[0] if reference else ""
                column = column_index_from_string(letters) if letters else column + 1
            elif event == "end" and element.tag == SHEET_NS + "c":
                text = _cell_text(element, shared)
                if text is not None:
                    found[(row_number, column)] = text
            elif event == "end" and element.tag == SHEET_NS + "row":
                element.clear()
    return found


def _cell_text(cell: Any, shared: list[str]) -> str | None:
    kind = cell.get("t")
    if kind == "inlineStr":
        inline = cell.find(SHEET_NS + "is")
        return None if inline is None else rich_text(inline)
    if kind == "s":
        index = (cell.findtext(SHEET_NS + "v") or "").strip()
        return shared[int(index)] if index.isdigit() and int(index) < len(shared) else None
    return None


def _put_exact_strings(rows: dict[int, list[Any]], strings: dict[tuple[int, int], str]) -> None:
    for (row_number, column), text in strings.items():
        row = rows.get(row_number)
        if row is None or column > MAX_COLUMNS or not text:
            continue
        if len(row) < column:
            row.extend([None] * (column - len(row)))
        row[column - 1] = text


def _shared_strings_path(archive: zipfile.ZipFile) -> str | None:
    from defusedxml.ElementTree import fromstring

    names = set(archive.namelist())
    rels: Iterable[Element]
    try:
        rels = fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, SyntaxError):
        rels = []
    for rel in rels:
        if rel.get("Type", "").endswith("/sharedStrings"):
            target = rel.get("Target", "")
            name = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
            if name in names:
                return name
    return "xl/sharedStrings.xml" if "xl/sharedStrings.xml" in names else None
