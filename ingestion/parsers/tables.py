"""Rows and tables as text, shared by the sheet, CSV, DOCX, ODF and PDF parsers.

A sheet row becomes `column: value | column: value`, so each row stands on its own once chunked; a table in
running text becomes a Markdown table. The header row is found under any title rows a person typed above it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

from ingestion.parsers.base import Segment

# A header is looked for among the first rows only: a table that starts further down is rare.
HEADER_SEARCH_ROWS = 30
_NUMBER = re.compile(r"^[-+]?(\d+([.,]\d+)*|\d*[.,]\d+)([eE][-+]?\d+)?%?$")
_DATE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([ T]\d{1,2}:\d{2}(:\d{2})?)?$")


def format_value(value: Any) -> str:
    """A cell value as a person would read it: dates in ISO form, 3.0 as 3, booleans as TRUE/FALSE."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds" if value.second else "minutes")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        seconds = int(value.total_seconds())
        sign = "-" if seconds < 0 else ""
        hours, rest = divmod(abs(seconds), 3600)
        return f"{sign}{hours}:{rest // 60:02d}:{rest % 60:02d}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return " ".join(str(value).split())


def looks_typed(text: str) -> bool:
    """True for text that is really a number or a date (a CSV holds only strings)."""
    text = text.strip()
    return bool(text) and bool(_NUMBER.match(text) or _DATE.match(text))


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and not looks_typed(value)


def _filled(row: Sequence[Any]) -> list[int]:
    return [i for i, value in enumerate(row) if value not in (None, "")]


def find_header(
    rows: Sequence[Sequence[Any]], *, bold: Sequence[bool] | None = None, csv_header: bool | None = None
) -> int | None:
    """Index of the header row, or None when the table has none.

    In a sheet, the header is the first all-text row that names every column the first data row (the
    first with a number, date or boolean) fills, so title rows typed above the table are passed over.
    With no typed row to lean on, a bold first row is a header. In a CSV the first row is the header
    when it is all text and either typed rows follow or `csv_header` (the stdlib sniffer) says so.
    """
    sample = list(rows[:HEADER_SEARCH_ROWS])
    first = next((i for i, row in enumerate(sample) if _filled(row)), None)
    if first is None:
        return None
    data_index = next(
        (
            i
            for i, row in enumerate(sample)
            if len(_filled(row)) >= 2 and any(not _is_text(row[j]) for j in _filled(row))
        ),
        None,
    )
    if csv_header is not None:
        all_text = all(_is_text(sample[first][j]) for j in _filled(sample[first]))
        typed_below = data_index is not None and data_index > first
        return first if all_text and (typed_below or csv_header) else None
    if data_index is None:
        return first if bold is not None and first < len(bold) and bold[first] else None
    needed = set(_filled(sample[data_index]))
    for i in range(data_index):
        filled = _filled(sample[i])
        if len(filled) >= 2 and needed <= set(filled) and all(_is_text(sample[i][j]) for j in filled):
            return i
    return None


def column_names(header: Sequence[Any], width: int, fallback: Sequence[str]) -> list[str]:
    names = []
    for column in range(width):
        name = format_value(header[column]) if column < len(header) else ""
        names.append(name or fallback[column])
    # Two columns with one name would read as one in `name: value` text.
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            seen[name] += 1
            names[i] = f"{name} ({seen[name]})"
        else:
            seen[name] = 1
    return names


def row_text(names: Sequence[str], values: Sequence[Any]) -> str:
    pairs = []
    for i, value in enumerate(values):
        text = format_value(value)
        if text:
            pairs.append(f"{names[i]}: {text}" if i < len(names) else text)
    return " | ".join(pairs)


def column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def rows_to_segments(
    rows: Sequence[Sequence[Any]],
    *,
    title: str,
    meta: dict,
    row_numbers: Sequence[int] | None = None,
    bold: Sequence[bool] | None = None,
    raw_rows: Sequence[Sequence[Any]] | None = None,
    csv_header: bool | None = None,
) -> list[Segment]:
    """One segment per data row; title rows above the header become one preamble segment.

    `raw_rows` are the rows before merged values were spread, which is what the header search must see
    (a merged title would otherwise look like a full row). Columns without a header are named by letter
    in sheets and "column N" in CSV files.
    """
    rows = [list(row) for row in rows]
    if not rows:
        return []
    numbers = list(row_numbers) if row_numbers is not None else list(range(1, len(rows) + 1))
    width = max(len(row) for row in rows)
    fallback = [column_letter(i) if csv_header is None else f"column {i + 1}" for i in range(width)]
    unspread = [list(row) for row in raw_rows] if raw_rows is not None else rows
    start = find_header(unspread, bold=bold, csv_header=csv_header)
    band = None
    if start is None and csv_header is None:
        band = find_two_row_header(unspread)
        start = band + 1 if band is not None else None
    if start is None and raw_rows is not None and is_form(unspread, rows):
        return [Segment(form_text(unspread), title=title, meta={**meta, "row": numbers[0], "form": True})]
    segments: list[Segment] = []
    if start is None:
        names, body_start = fallback, 0
    else:
        header = rows[start]
        if band is not None:
            # Two header rows: a band above (a year, merged over its columns) and the names below.
            header = [
                " ".join(
                    part
                    for part in (format_value(_at(rows[band], c)), format_value(_at(rows[start], c)))
                    if part
                )
                for c in range(width)
            ]
        names = column_names(header, width, fallback)
        body_start = start + 1
        above = unspread[: band if band is not None else start]
        preamble = [" ".join(format_value(v) for v in row if format_value(v)) for row in above]
        preamble = [line for line in preamble if line]
        if preamble:
            segments.append(Segment("\n".join(preamble), title=title, meta={**meta, "row": numbers[0]}))
    for row, number in zip(rows[body_start:], numbers[body_start:], strict=True):
        text = row_text(names, row)
        if text:
            segments.append(Segment(text, title=title, meta={**meta, "row": number}))
    return segments


def _at(row: Sequence[Any], column: int) -> Any:
    return row[column] if column < len(row) else None


def find_two_row_header(rows: Sequence[Sequence[Any]]) -> int | None:
    """Index of the upper of two header rows that together name every column of the first data row (a band
    such as a year merged over "Units | Revenue" below it), or None. Rows are as typed, before merges are
    spread; both sit right above the data, the lower all text, the upper text or years."""
    sample = list(rows[:HEADER_SEARCH_ROWS])
    data_index = next(
        (
            i
            for i, row in enumerate(sample)
            if len(_filled(row)) >= 2
            and any(not _is_text(row[j]) and not _is_year(row[j]) for j in _filled(row))
        ),
        None,
    )
    if data_index is None or data_index < 2:
        return None
    upper, lower = sample[data_index - 2], sample[data_index - 1]
    if not _filled(upper) or len(_filled(lower)) < 2:
        return None
    if not all(_is_text(lower[j]) for j in _filled(lower)):
        return None
    if not all(_is_text(upper[j]) or _is_year(upper[j]) for j in _filled(upper)):
        return None
    if set(_filled(sample[data_index])) <= set(_filled(upper)) | set(_filled(lower)):
        return data_index - 2
    return None


def _is_year(value: Any) -> bool:
    # A band over its columns is often a year, typed as a number.
    text = format_value(value)
    return text.isdigit() and len(text) == 4 and 1900 <= int(text) <= 2100


def is_form(unspread: Sequence[Sequence[Any]], spread: Sequence[Sequence[Any]]) -> bool:
    """A sheet laid out as a form: merged cells (spreading changed something), no header row, and no row with
    more than three values as typed (labels beside their answers, paragraphs across merged columns)."""
    if all(list(a) == list(b) for a, b in zip(unspread, spread, strict=False)):
        return False
    filled = [len(_filled(row)) for row in unspread if _filled(row)]
    return bool(filled) and max(filled) <= 3


def form_text(rows: Sequence[Sequence[Any]]) -> str:
    """A form as lines a person reads: "label: answer" for a label beside its answer, the values of a row
    joined by " | " otherwise; each merged value once."""
    lines = []
    for row in rows:
        values = [format_value(row[i]) for i in _filled(row)]
        values = [v for v in values if v]
        if not values:
            continue
        if len(values) == 2 and not values[0].endswith((".", "?", "!")):
            lines.append(f"{values[0].rstrip(':').rstrip()}: {values[1]}")
        else:
            lines.append(" | ".join(values))
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; the first row is the header. Ragged rows are padded, pipes escaped."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = []
    for i, row in enumerate(rows):
        cells = [_cell(cell) for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)
