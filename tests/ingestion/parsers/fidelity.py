"""How much of each shared document reaches our text, measured against a plain reader (issue #52).

For every file in shared/data/documents, a reference is read with a plain, well-known reader that shares
no code with our parsers: pypdfium2's own text page for PDFs (pdftotext when poppler-utils is installed),
python-docx's paragraphs and table cells, openpyxl's cell values (visible sheets, as we index), the csv
module, and the raw file for Markdown and text, lxml's text for HTML. Then:
  prose   (PDF, DOCX, Markdown, HTML) the share of the reference's lines of three words or more that are
          found in our text; a PDF's running headers and footers (lines on half its pages or more, page
          numbers aside) are left out of the reference, as we leave them out on purpose;
  table   (XLSX, CSV) the share of the reference's cell tokens found in ours, counted with repeats;
  refusal our reason, when we refuse the file.
Text is compared as lowercase word tokens, so markup (Markdown tables, `column: value` rows), punctuation
and line breaks are not differences. A reference is "good" when it holds enough text and passes the same
word test as a PDF text layer; a reference that is not good (a scan's noisy OCR layer, nothing at all)
says nothing about us and is reported without a share.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ingestion.parsers.base import ParseError, Segment
from ingestion.parsers.text_check import text_problem

# Han, kana and hangul characters are tokens on their own: those scripts put no spaces between words, so
# runs of them break wherever a reader happens to break lines.
_IDEOGRAPHS = "\u2e80-\u9fff\uf900-\ufaff\uac00-\ud7af"
# Underscores split words too: Markdown output escapes them ("wise\\_chat"), identifiers join words with them.
_WORD = re.compile(rf"[{_IDEOGRAPHS}]|[^\W_{_IDEOGRAPHS}]+")
# PDFium marks a word hyphenated across a line end with U+FFFE and joins the lines; so do we, when the next
# line goes on in lowercase. PDFium joins whatever text comes next, even a new line that starts with a
# capital: on a scanned book page, the label of a picture ("conceiva" + "SibieyTent. ble shape") or a
# caption after a speck of noise ("mw" + "Cannister shot is"). No word goes on in a capital, so there the
# reference keeps the hyphen and the line break, as the page shows them.
_PDFIUM_JOIN = re.compile("\ufffe(.?)", re.S)


def _unjoined(match: re.Match) -> str:
    following = match.group(1)
    return f"-\n{following}" if following.isupper() else following


MIN_LINE_WORDS = 3
# A reference with fewer units than this is too small to say anything about a share.
MIN_UNITS = 3
TABLE_KINDS = ("xlsx", "csv")
_HTML_BLOCKS = (
    "p",
    "div",
    "li",
    "tr",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "dt",
    "dd",
    "table",
    "dl",
)


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def padded(text: str) -> str:
    """Tokens joined by single spaces and padded, so `in` matches whole words only."""
    return " " + " ".join(tokens(text)) + " "


@dataclass
class Reference:
    reader: str
    units: list[str]  # prose: padded token lines; table: single tokens
    text: str  # the reader's whole text, for the word test
    words: list[str]  # every token of the text (running headers and footers left out)

    @property
    def good(self) -> bool:
        return len(self.units) >= MIN_UNITS and text_problem(self.text) is None


@dataclass
class FileFidelity:
    relative: str
    kind: str  # "prose" or "table"
    reference: Reference | None  # None when the plain reader cannot open the file either
    found: int = 0
    words_found: int = 0
    refusal: str = ""  # our reason, when we refuse the file
    refusal_detail: str = ""
    missing: tuple[str, ...] = ()

    @property
    def share(self) -> float | None:
        """Lines (prose) or cell tokens (tables) of a good reference found in our text."""
        if self.reference is None or not self.reference.good:
            return None
        return self.found / len(self.reference.units)

    @property
    def word_share(self) -> float | None:
        """Tokens of a good reference found in our text, counted with repeats, in any order: what a
        difference in reading order cannot hide, so a share under 1 is text lost."""
        if self.reference is None or not self.reference.good:
            return None
        return self.words_found / len(self.reference.words) if self.reference.words else 1.0

    def line(self) -> str:
        reader = self.reference.reader if self.reference else "-"
        units = len(self.reference.units) if self.reference else 0
        share = "   -  " if self.share is None else f"{self.share:6.1%}"
        words = "   -  " if self.word_share is None else f"{self.word_share:6.1%}"
        good = "good" if self.reference and self.reference.good else "n/a "
        outcome = f"refused: {self.refusal}" if self.refusal else f"{self.found}/{units} {self.kind} units"
        return f"{self.relative:48} {share} {words}  ref {good} ({reader}, {units})  {outcome}"


# ---- plain readers -------------------------------------------------------------------------------------


def _pdf_pages(path: Path) -> tuple[str, list[str]]:
    if shutil.which("pdftotext"):
        out = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, check=True).stdout
        return "pdftotext", out.decode("utf-8", "replace").split("\f")
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        pages = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            pages.append(_PDFIUM_JOIN.sub(_unjoined, textpage.get_text_range()))
            textpage.close()
            page.close()
        return "pypdfium2", pages
    finally:
        document.close()


def _without_digits(line: str) -> str:
    return " ".join(re.sub(r"\d+", " ", line).split())


def _running_lines(pages: list[list[str]]) -> set[str]:
    """Lines on half the pages or more, page numbers aside (left or right): running headers and footers."""
    if len(pages) < 2:
        return set()
    counts = Counter(_without_digits(line) for page in pages for line in set(page))
    return {line for line, n in counts.items() if line and n >= max(2, (len(pages) + 1) // 2)}


def _prose_reference(reader: str, pages: list[str]) -> Reference:
    lines = [[padded(line) for line in page.splitlines()] for page in pages]
    running = _running_lines(lines)
    kept = [line for page in lines for line in page if _without_digits(line) not in running]
    units = [line for line in kept if len(line.split()) >= MIN_LINE_WORDS]
    return Reference(reader, units, "\n".join(pages), [word for line in kept for word in line.split()])


def _docx_texts(path: Path) -> list[str]:
    import docx

    document = docx.Document(str(path))
    texts = [paragraph.text for paragraph in document.paragraphs]

    seen: set[object] = set()  # cell elements: held here, lxml gives the same proxy for the same cell

    def cells(table: object) -> None:
        for row in table.rows:  # type: ignore[attr-defined]
            for cell in row.cells:
                # python-docx gives a merged cell once per grid column it spans: count it once.
                if cell._tc in seen:
                    continue
                seen.add(cell._tc)
                texts.extend(paragraph.text for paragraph in cell.paragraphs)
                for inner in cell.tables:
                    cells(inner)

    for table in document.tables:
        cells(table)
    return texts


def _cell_text(value: object) -> str:
    import datetime as dt

    if isinstance(value, dt.datetime) and value.time() == dt.time(0, 0):
        return value.date().isoformat()
    if isinstance(value, dt.timedelta):
        # A duration as Excel shows it ([h]:mm:ss), not Python's "10 days, 15:10:10".
        seconds = int(value.total_seconds())
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def _xlsx_values(path: Path) -> list[str]:
    import openpyxl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        return [
            _cell_text(value)
            for sheet in workbook.worksheets
            if sheet.sheet_state == "visible"
            for row in sheet.iter_rows(values_only=True)
            for value in row
        ]
    finally:
        workbook.close()


def _csv_values(path: Path) -> list[str]:
    from charset_normalizer import from_path

    best = from_path(path).best()
    text = str(best) if best is not None else path.read_bytes().decode("latin-1")
    try:
        dialect = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    return [
        cell for row in csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), dialect) for cell in row
    ]


def _html_text(path: Path) -> str:
    import lxml.html
    from lxml import etree

    tree = lxml.html.fromstring(path.read_bytes())
    etree.strip_elements(tree, "script", "style", "noscript", "template", with_tail=False)
    # text_content() runs neighbouring blocks and cells together ("127.0.0.1ub2f..."): a line break after
    # each block and a space after each cell keep their words apart, as a browser shows them.
    for element in tree.iter(*_HTML_BLOCKS):
        element.tail = "\n" + (element.tail or "")
    for element in tree.iter("td", "th"):
        element.tail = " " + (element.tail or "")
    return tree.text_content()


def reference(path: Path, kind: str) -> Reference | None:
    """The plain reader's text of the file, or None when it cannot open it either (a password)."""
    try:
        if kind == "pdf":
            return _prose_reference(*_pdf_pages(path))
        if kind == "docx":
            texts = _docx_texts(path)
            return _prose_reference("python-docx", ["\n".join(texts)])
        if kind == "xlsx":
            values = _xlsx_values(path) if path.suffix == ".xlsx" else _csv_values(path)
            cells = [t for v in values for t in tokens(v)]
            return Reference("openpyxl", cells, " ".join(values), cells)
        if kind == "csv":
            values = _csv_values(path)
            cells = [t for v in values for t in tokens(v)]
            return Reference("csv", cells, " ".join(values), cells)
        if kind == "html":
            return _prose_reference("lxml", [_html_text(path)])
        return _prose_reference("raw file", [path.read_bytes().decode("utf-8", "replace")])
    except Exception:  # the plain reader refuses the file (encrypted, not a zip): no reference
        return None


# ---- the comparison ------------------------------------------------------------------------------------


def compare(relative: str, path: Path, ours: str | ParseError) -> FileFidelity:
    kind_folder = relative.split("/", 1)[0]
    ref = reference(path, kind_folder)
    kind = "table" if kind_folder in TABLE_KINDS else "prose"
    result = FileFidelity(relative, kind, ref)
    if isinstance(ours, ParseError):
        result.refusal, result.refusal_detail = ours.reason, ours.detail
        return result
    if ref is None:
        return result
    available = Counter(tokens(ours))
    wanted = Counter(ref.words)
    result.words_found = sum(min(n, available[token]) for token, n in wanted.items())
    if kind == "table":
        result.found = result.words_found
        result.missing = tuple(sorted(t for t, n in wanted.items() if available[t] < n))[:20]
    else:
        text = padded(ours)
        missing = [unit for unit in ref.units if unit not in text]
        result.found = len(ref.units) - len(missing)
        result.missing = tuple(unit.strip() for unit in missing[:20])
    return result


def our_text(segments: list[Segment]) -> str:
    """What we index for a file: each document's title (a section heading, a sheet's name, an HTML page's
    title) and its segments' text."""
    parts = []
    title = None
    for segment in segments:
        if segment.title and segment.title != title:
            parts.append(segment.title)
        title = segment.title
        parts.append(segment.text)
    return "\n\n".join(parts)


def documents(root: Path) -> list[str]:
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file() and path.name != "MANIFEST.tsv"
    )


def summary(results: list[FileFidelity]) -> dict:
    measured = [r for r in results if r.share is not None]
    prose = [r for r in measured if r.kind == "prose"]
    tables = [r for r in measured if r.kind == "table"]

    def pooled(group: list[FileFidelity]) -> float:
        total = sum(len(r.reference.units) for r in group if r.reference)
        return round(sum(r.found for r in group) / total, 4) if total else 1.0

    words_total = sum(len(r.reference.words) for r in measured if r.reference)
    return {
        "files": len(results),
        "measured": len(measured),
        "prose_lines_found": pooled(prose),
        "table_tokens_found": pooled(tables),
        "words_found": round(sum(r.words_found for r in measured) / words_total, 4) if words_total else 1.0,
        "files_under_95": [r.relative for r in measured if r.share is not None and r.share < 0.95],
        "refused": {r.relative: r.refusal for r in results if r.refusal},
        "no_good_reference": [r.relative for r in results if r.share is None and not r.refusal],
    }
