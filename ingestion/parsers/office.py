"""Legacy Office files: DOC through antiword, then catdoc, then LibreOffice; XLS through xlrd.

Word 97-2003 has no well-kept pure-Python reader, so Debian's tools do the work, each in a subprocess with
a time limit. antiword keeps paragraphs and draws tables with bars; catdoc reads some files antiword
refuses (fast-saved documents, Word 6); LibreOffice, where installed, converts anything left to DOCX.
The OpenDocument parsers live in odf.py and are re-exported here, where the registry looks for them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ingestion.parsers.base import ParseError, ParseOptions, Parser, Segment, corrupt, password_protected
from ingestion.parsers.odf import OdsParser, OdtParser
from ingestion.parsers.tables import rows_to_segments
from ingestion.parsers.xlsx import fill_merged

__all__ = [
    "AntiwordParser",
    "CatdocParser",
    "LibreOfficeParser",
    "OdsParser",
    "OdtParser",
    "XlsParser",
]

DOC = "application/msword"
XLS = "application/vnd.ms-excel"
TOOL_TIMEOUT_S = 60


def _paragraph_segments(text: str) -> list[Segment]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # antiword pads table cells to the page width: "|North        |1200       |" reads as "|North |1200 |".
    lines = [re.sub(r" {2,}\|", " |", line.rstrip()) for line in text.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return [Segment(text)] if text else []


def _run_tool(command: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ParseError(
            "Parsing took too long and was stopped. The document may be damaged.",
            f"{command[0]} timed out after {timeout_s}s",
            reason="timeout",
        ) from exc


class AntiwordParser(Parser):
    name = "antiword"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 90 if sniffed_type == DOC and shutil.which("antiword") else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        # -w 0: one line per paragraph; the absolute path can never be read as an option.
        result = _run_tool(["antiword", "-w", "0", str(path.resolve())], TOOL_TIMEOUT_S)
        stderr = result.stderr.decode("utf-8", "replace")
        if result.returncode != 0:
            if "encrypted" in stderr.lower():
                raise password_protected(f"antiword: {stderr.strip()}")
            raise corrupt(f"antiword exit {result.returncode}: {stderr.strip()[:500]}")
        return _paragraph_segments(result.stdout.decode("utf-8", "replace"))


class CatdocParser(Parser):
    name = "catdoc"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 70 if sniffed_type == DOC and shutil.which("catdoc") else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        result = _run_tool(["catdoc", "-w", "-d", "utf-8", str(path.resolve())], TOOL_TIMEOUT_S)
        if result.returncode != 0:
            stderr = result.stderr.decode("utf-8", "replace")
            raise corrupt(f"catdoc exit {result.returncode}: {stderr[:500]}")
        return _paragraph_segments(result.stdout.decode("utf-8", "replace"))


class LibreOfficeParser(Parser):
    """Converts to DOCX or XLSX with LibreOffice headless and parses that; the last resort where installed."""

    name = "libreoffice"
    targets = {DOC: "docx", XLS: "xlsx"}

    def score(self, sniffed_type: str, filename: str) -> int:
        return 30 if sniffed_type in self.targets and shutil.which("soffice") else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        from ingestion.parsers.registry import detect_type

        sniffed = detect_type(path, filename)
        target = self.targets[sniffed]
        with tempfile.TemporaryDirectory(prefix="grounded-soffice-") as workdir:
            work = Path(workdir)
            # The uploader's name never reaches the command line or the file system.
            source = work / f"input.{'doc' if sniffed == DOC else 'xls'}"
            shutil.copyfile(path, source)
            profile = (work / "profile").as_uri()
            command = [
                options.soffice_cmd,
                f"-env:UserInstallation={profile}",
                "--headless",
                "--norestore",
                "--convert-to",
                target,
                "--outdir",
                str(work / "out"),
                str(source),
            ]
            result = _run_tool(command, options.soffice_timeout_s)
            converted = work / "out" / f"input.{target}"
            if result.returncode != 0 or not converted.exists():
                stderr = result.stderr.decode("utf-8", "replace")
                raise corrupt(f"soffice exit {result.returncode}: {stderr[:500]}")
            if target == "docx":
                from ingestion.parsers.docx import DocxParser

                return DocxParser().parse(converted, "converted.docx", options)
            from ingestion.parsers.xlsx import XlsxParser

            return XlsxParser().parse(converted, "converted.xlsx", options)


def _xls_value(book: Any, cell: Any) -> Any:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return xlrd.xldate_as_datetime(cell.value, book.datemode)
        except (xlrd.xldate.XLDateError, OverflowError):
            return cell.value
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERROR")
    if cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return None
    return cell.value


def _xls_bold(book: Any, cells: list[Any]) -> bool:
    filled = [cell for cell in cells if cell.value not in (None, "")]
    if not filled or not book.formatting_info:
        return False
    return all(book.font_list[book.xf_list[cell.xf_index].font_index].bold for cell in filled)


class XlsParser(Parser):
    name = "xlrd"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == XLS else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        import xlrd
        from xlrd.biffh import XLRDError  # what xlrd.XLRDError is; its stubs do not re-export it

        try:
            book = xlrd.open_workbook(str(path), formatting_info=True, on_demand=True)
        except XLRDError as exc:
            if "encrypted" in str(exc).lower():
                raise password_protected(f"xlrd: {exc}") from exc
            raise corrupt(f"xlrd: {exc}") from exc
        except (OSError, AssertionError, IndexError, KeyError, ValueError) as exc:
            raise corrupt(f"xlrd: {exc!r}") from exc
        try:
            segments = []
            for index in range(book.nsheets):
                sheet = book.sheet_by_index(index)
                if sheet.visibility != 0:
                    continue  # 1 = hidden, 2 = very hidden
                rows: dict[int, list[Any]] = {}
                bold: dict[int, bool] = {}
                for row_index in range(sheet.nrows):
                    cells = sheet.row(row_index)
                    values = [_xls_value(book, cell) for cell in cells]
                    if any(value not in (None, "") for value in values):
                        rows[row_index + 1] = values
                        bold[row_index + 1] = _xls_bold(book, cells)
                raw = {number: list(values) for number, values in rows.items()}
                # xlrd ranges are 0-based with exclusive ends.
                fill_merged(rows, [(rlo + 1, clo + 1, rhi, chi) for rlo, rhi, clo, chi in sheet.merged_cells])
                numbers = sorted(rows)
                segments.extend(
                    rows_to_segments(
                        [rows[n] for n in numbers],
                        title=sheet.name,
                        meta={"sheet": sheet.name},
                        row_numbers=numbers,
                        bold=[bold.get(n, False) for n in numbers],
                        raw_rows=[raw.get(n, []) for n in numbers],
                    )
                )
                book.unload_sheet(index)
            return segments
        finally:
            book.release_resources()
