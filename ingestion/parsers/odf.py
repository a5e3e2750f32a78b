"""OpenDocument text (ODT) as Markdown and spreadsheets (ODS) as rows, read with odfpy.

odfpy gives the document as a DOM; it is walked here for headings (text:h with its outline level), lists,
tables, text boxes (draw:text-box), notes and comments. Spreadsheet cells carry typed values (office:value,
office:date-value) that are used instead of the displayed text, so dates and numbers read the same as
from XLSX; repeated rows and columns are expanded only when they hold something.
"""

from __future__ import annotations

import datetime as dt
import zipfile
from pathlib import Path
from typing import Any

from ingestion.parsers.base import ParseOptions, Parser, Segment, corrupt
from ingestion.parsers.safety import check_office_zip
from ingestion.parsers.tables import markdown_table, rows_to_segments
from ingestion.parsers.text import join_blocks, split_markdown

ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
MAX_COLUMNS = 1000
MAX_ROW_REPEAT = 1000


def _load(path: Path) -> Any:
    from odf.opendocument import load

    check_office_zip(path)
    try:
        return load(str(path))
    except (KeyError, ValueError, zipfile.BadZipFile, AttributeError) as exc:
        raise corrupt(f"odfpy: {exc!r}") from exc
    except Exception as exc:
        # odfpy reports XML errors as xml.sax exceptions; a broken content.xml is a broken file.
        if type(exc).__module__.startswith("xml."):
            raise corrupt(f"odfpy: {exc!r}") from exc
        raise


def _attr(element: Any, namespace: str, name: str) -> str | None:
    return element.attributes.get((namespace, name))


def _is(node: Any, namespace: str, name: str) -> bool:
    return getattr(node, "qname", None) == (namespace, name)


class OdtRenderer:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.comments: list[str] = []
        self.in_cell = 0

    def inline(self, element: Any, boxes: list[Any]) -> str:
        parts: list[str] = []
        for node in element.childNodes:
            if node.nodeType == node.TEXT_NODE:
                parts.append(node.data)
            elif _is(node, TEXT, "s"):
                parts.append(" " * int(_attr(node, TEXT, "c") or 1))
            elif _is(node, TEXT, "tab"):
                parts.append(" ")
            elif _is(node, TEXT, "line-break"):
                parts.append("\n")
            elif _is(node, TEXT, "note"):
                citation = next((n for n in node.childNodes if _is(n, TEXT, "note-citation")), None)
                body = next((n for n in node.childNodes if _is(n, TEXT, "note-body")), None)
                label = str(len(self.notes) + 1)
                if citation is not None:
                    label = self.inline(citation, boxes).strip() or label
                parts.append(f"[^{label}]")
                if body is not None:
                    self.notes.append(f"[^{label}]: " + " ".join(self.blocks(body)))
            elif _is(node, OFFICE, "annotation"):
                text = " ".join(self.blocks(node))
                if text.strip():
                    self.comments.append(f"- {text}")
            elif _is(node, DRAW, "text-box"):
                boxes.append(node)
            elif getattr(node, "childNodes", None):
                parts.append(self.inline(node, boxes))
        return "".join(parts)

    def _paragraph(self, element: Any, prefix: str = "") -> list[str]:
        boxes: list[Any] = []
        lines = [" ".join(line.split()) for line in self.inline(element, boxes).split("\n")]
        text = "\n".join(line for line in lines if line)
        blocks = [prefix + text] if text else []
        for box in boxes:
            blocks.extend(self.blocks(box))
        return blocks

    def _list(self, element: Any, depth: int) -> list[str]:
        out: list[str] = []
        for item in element.childNodes:
            if not (_is(item, TEXT, "list-item") or _is(item, TEXT, "list-header")):
                continue
            for child in item.childNodes:
                if _is(child, TEXT, "list"):
                    out.extend(self._list(child, depth + 1))
                elif _is(child, TEXT, "p") or _is(child, TEXT, "h"):
                    out.extend(self._paragraph(child, "  " * depth + "- "))
        return out

    def _table(self, element: Any) -> list[str]:
        grid = []
        for row in table_rows(element):
            cells = []
            for cell in row.childNodes:
                if _is(cell, TABLE, "table-cell") or _is(cell, TABLE, "covered-table-cell"):
                    repeat = min(int(_attr(cell, TABLE, "number-columns-repeated") or 1), MAX_COLUMNS)
                    self.in_cell += 1
                    text = "<br>".join(self.blocks(cell))
                    self.in_cell -= 1
                    cells.extend([text] * (repeat if text else min(repeat, 1)))
            grid.append(cells)
        table = markdown_table(grid)
        return [table] if table else []

    def blocks(self, container: Any) -> list[str]:
        out: list[str] = []
        for node in container.childNodes:
            if _is(node, TEXT, "h"):
                level = int(_attr(node, TEXT, "outline-level") or 1)
                out.extend(self._paragraph(node, "" if self.in_cell else "#" * min(level, 6) + " "))
            elif _is(node, TEXT, "p"):
                out.extend(self._paragraph(node))
            elif _is(node, TEXT, "list"):
                out.extend(self._list(node, 0))
            elif _is(node, TABLE, "table"):
                out.extend(self._table(node))
            elif getattr(node, "childNodes", None) and not _is(node, TEXT, "tracked-changes"):
                # Sections, frames and the like are wrappers around more blocks.
                out.extend(self.blocks(node))
        return out


def table_rows(table: Any) -> list[Any]:
    """The table's own rows, through header and row groups, but not the rows of tables nested in cells."""
    rows = []
    for node in table.childNodes:
        if _is(node, TABLE, "table-row"):
            rows.append(node)
        elif getattr(node, "qname", (None, ""))[1] in ("table-header-rows", "table-rows", "table-row-group"):
            rows.extend(table_rows(node))
    return rows


class OdtParser(Parser):
    name = "odfpy-text"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == ODT else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        document = _load(path)
        renderer = OdtRenderer()
        parts = [join_blocks(renderer.blocks(document.text))]
        if renderer.notes:
            parts.append("## Notes\n\n" + "\n\n".join(renderer.notes))
        if renderer.comments:
            parts.append("## Comments\n\n" + "\n".join(renderer.comments))
        return split_markdown("\n\n".join(part for part in parts if part.strip()))


def _cell_value(cell: Any) -> Any:
    kind = _attr(cell, OFFICE, "value-type")
    try:
        if kind in ("float", "percentage", "currency") and _attr(cell, OFFICE, "value"):
            return float(_attr(cell, OFFICE, "value") or "")
        if kind == "date":
            return dt.datetime.fromisoformat(_attr(cell, OFFICE, "date-value") or "")
        if kind == "boolean":
            return (_attr(cell, OFFICE, "boolean-value") or "").lower() == "true"
    except ValueError:
        pass
    texts = []
    for paragraph in cell.childNodes:
        if _is(paragraph, TEXT, "p"):
            texts.append(OdtRenderer().inline(paragraph, []))
    return "\n".join(texts) or None


def _hidden_tables(document: Any) -> set[str | None]:
    """Names of the automatic table styles that hide a sheet (table:display="false")."""
    hidden: set[str | None] = set()
    for style in document.automaticstyles.childNodes:
        for properties in getattr(style, "childNodes", []):
            if _is(properties, STYLE, "table-properties") and _attr(properties, TABLE, "display") == "false":
                hidden.add(_attr(style, STYLE, "name"))
    return hidden


def sheet_rows(table: Any) -> tuple[dict[int, list[Any]], list[tuple[int, int, int, int]]]:
    rows: dict[int, list[Any]] = {}
    spans = []
    row_number = 0
    for row in table_rows(table):
        repeat = int(_attr(row, TABLE, "number-rows-repeated") or 1)
        values: list[Any] = []
        for cell in row.childNodes:
            if not (_is(cell, TABLE, "table-cell") or _is(cell, TABLE, "covered-table-cell")):
                continue
            columns = int(_attr(cell, TABLE, "number-columns-repeated") or 1)
            value = _cell_value(cell) if _is(cell, TABLE, "table-cell") else None
            across = int(_attr(cell, TABLE, "number-columns-spanned") or 1)
            down = int(_attr(cell, TABLE, "number-rows-spanned") or 1)
            if across > 1 or down > 1:
                spans.append((row_number + 1, len(values) + 1, row_number + down, len(values) + across))
            # Trailing empty cells are often "repeated 1024 times" to the sheet's edge.
            count = min(columns, MAX_COLUMNS - len(values)) if value is not None else min(columns, 1)
            values.extend([value] * max(count, 0))
        if any(value not in (None, "") for value in values):
            for _ in range(min(repeat, MAX_ROW_REPEAT)):
                row_number += 1
                rows[row_number] = list(values)
        else:
            row_number += repeat
    return rows, spans


class OdsParser(Parser):
    name = "odfpy-sheet"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == ODS else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        from odf.table import Table

        from ingestion.parsers.xlsx import fill_merged

        document = _load(path)
        hidden = _hidden_tables(document)
        segments = []
        for table in document.spreadsheet.getElementsByType(Table):
            if _attr(table, TABLE, "style-name") in hidden:
                continue
            name = _attr(table, TABLE, "name") or ""
            rows, spans = sheet_rows(table)
            raw = {number: list(values) for number, values in rows.items()}
            fill_merged(rows, spans)
            numbers = sorted(rows)
            segments.extend(
                rows_to_segments(
                    [rows[n] for n in numbers],
                    title=name,
                    meta={"sheet": name},
                    row_numbers=numbers,
                    raw_rows=[raw.get(n, []) for n in numbers],
                )
            )
        return segments
