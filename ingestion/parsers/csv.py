"""CSV and TSV: encoding detected, delimiter sniffed, one segment per row as `column: value | ...`."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ingestion.parsers.base import ParseError, ParseOptions, Parser, Segment, extension
from ingestion.parsers.tables import rows_to_segments
from ingestion.parsers.text import read_text

DELIMITERS = ",;\t|"
SNIFF_CHARS = 64 * 1024


def sniff_dialect(text: str, filename: str) -> type[csv.Dialect] | csv.Dialect:
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS:
        # A cut-off last line would throw the sniffer's consistency count.
        sample = sample[: max(sample.rfind("\n"), sample.rfind("\r"), 1)]
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS)
    except csv.Error:
        return csv.excel_tab if extension(filename) == "tsv" else csv.excel


def read_rows(text: str, dialect: type[csv.Dialect] | csv.Dialect) -> list[list[str]]:
    # newline="" lets the csv module see \r, \n and \r\n alike, and keep line breaks inside quoted cells.
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    return [row for row in reader if any(cell.strip() for cell in row)]


def sniffer_says_header(text: str) -> bool:
    """The stdlib's guess, used only for all-text tables where no typed row shows where data starts.

    It compares each column's first value with the rest (type and length); when it cannot decide, a
    CSV's first row is a header by convention."""
    sample = text[:SNIFF_CHARS].replace("\r\n", "\n").replace("\r", "\n")
    try:
        return csv.Sniffer().has_header(sample[: max(sample.rfind("\n"), 1)])
    except csv.Error:
        return True


class CsvParser(Parser):
    name = "csv"

    def score(self, sniffed_type: str, filename: str) -> int:
        if sniffed_type in ("text/csv", "text/tab-separated-values"):
            return 100
        return 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        text, encoding = read_text(path)
        dialect = sniff_dialect(text, filename)
        try:
            rows = read_rows(text, dialect)
        except csv.Error as exc:
            raise ParseError(
                "The CSV file could not be read as a table.", f"csv: {exc}", reason="corrupt"
            ) from exc
        meta = {"encoding": encoding, "delimiter": dialect.delimiter}
        return rows_to_segments(rows, title="", meta=meta, csv_header=sniffer_says_header(text))
