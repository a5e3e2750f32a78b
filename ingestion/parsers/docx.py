"""DOCX as Markdown: headings, lists, tables (merged and nested cells), text boxes, notes, comments, and page
headers and footers that carry more than a page number.

python-docx opens the package (it follows the relationships, so a main part with another name is found),
and gives the body, styles and numbering as lxml elements; the body is walked here, because python-docx's
paragraph API skips text boxes, content controls, equations and note references. Notes and comments live
in parts python-docx does not model; they are parsed with defusedxml. The result is split on H1/H2.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingestion.parsers.base import ParseOptions, Parser, Segment, corrupt
from ingestion.parsers.ooxml import open_package
from ingestion.parsers.safety import check_office_zip, parse_xml
from ingestion.parsers.tables import markdown_table
from ingestion.parsers.text import join_blocks, split_markdown

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

# Subtrees whose text is not the document's: deletions, field codes, the fallback copy of a drawing, and
# properties (a content-control checkbox's state is in sdtPr, but Word also writes its ☐/☒ glyph as text).
_SKIP = {W + "del", W + "delText", W + "instrText", MC + "Fallback", W + "rPr", W + "pPr", W + "sdtPr"}
_BULLETS = {"bullet", "none", ""}
CHECKED, UNCHECKED = "☒", "☐"  # legacy form-field checkboxes have no glyph of their own


def _val(element: Any, tag: str) -> str | None:
    child = element.find(tag) if element is not None else None
    return None if child is None else child.get(W + "val", "")


def _symbol(code: str) -> str:
    """A w:sym character; codes in the private-use area belong to symbol fonts and mean nothing as text."""
    try:
        point = int(code, 16)
    except ValueError:
        return ""
    return chr(point) if 0 < point < 0xE000 else ""


class Styles:
    """Heading levels and list formats, looked up from styles.xml and numbering.xml."""

    def __init__(self, document: Any) -> None:
        self.levels: dict[str, int] = {}
        self.style_numbering: dict[str, str] = {}
        styles = document.styles.element
        based_on: dict[str, str] = {}
        for style in styles.iter(W + "style"):
            style_id = style.get(W + "styleId", "")
            name = (_val(style, W + "name") or "").lower()
            parent = _val(style, W + "basedOn")
            if parent:
                based_on[style_id] = parent
            ppr = style.find(W + "pPr")
            outline = _val(ppr, W + "outlineLvl")
            if name == "title":
                self.levels[style_id] = 1
            elif name.startswith("heading ") and name[8:].isdigit():
                self.levels[style_id] = int(name[8:])
            elif outline is not None and outline.isdigit() and int(outline) < 9:
                self.levels[style_id] = int(outline) + 1
            numpr = ppr.find(W + "numPr") if ppr is not None else None
            if numpr is not None and _val(numpr, W + "numId") not in (None, "0"):
                self.style_numbering[style_id] = _val(numpr, W + "numId") or ""
        for style_id, parent in based_on.items():
            seen = {style_id}
            while style_id not in self.levels and parent in based_on and parent not in seen:
                seen.add(parent)
                parent = based_on[parent]
            if style_id not in self.levels and parent in self.levels:
                self.levels[style_id] = self.levels[parent]
        self.formats: dict[tuple[str, int], str] = {}
        try:
            numbering = document.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):
            numbering = None
        if numbering is not None:
            abstract = {
                a.get(W + "abstractNumId"): {
                    int(lvl.get(W + "ilvl", "0")): _val(lvl, W + "numFmt") or "" for lvl in a.iter(W + "lvl")
                }
                for a in numbering.iter(W + "abstractNum")
            }
            for num in numbering.iter(W + "num"):
                for level, fmt in abstract.get(_val(num, W + "abstractNumId"), {}).items():
                    self.formats[(num.get(W + "numId", ""), level)] = fmt


class Renderer:
    def __init__(self, styles: Styles) -> None:
        self.styles = styles
        # Inside a table cell a heading or list marker would break the Markdown table: text only.
        self.in_cell = 0

    # Inline text ------------------------------------------------------------------------------------
    def _tokens(self, element: Any, boxes: list[Any]) -> Iterator[str]:
        for child in element:
            tag = child.tag
            if not isinstance(tag, str) or tag in _SKIP:
                continue
            if tag in (W + "t", M + "t"):
                yield child.text or ""
            elif tag in (W + "tab", W + "ptab"):
                yield " "
            elif tag in (W + "br", W + "cr"):
                yield "\n"
            elif tag == W + "noBreakHyphen":
                yield "-"
            elif tag == W + "sym":
                yield _symbol(child.get(W + "char", ""))
            elif tag == W + "footnoteReference":
                yield f"[^{child.get(W + 'id')}]"
            elif tag == W + "endnoteReference":
                yield f"[^e{child.get(W + 'id')}]"
            elif tag == W + "checkBox":
                state = _val(child, W + "checked")
                state = state if state is not None else _val(child, W + "default")
                # <w:checked/> with no value means checked; without <w:checked> the default applies.
                yield CHECKED if state in ("1", "true", "") else UNCHECKED
            elif tag == W + "txbxContent":
                boxes.append(child)
            else:
                yield from self._tokens(child, boxes)

    def inline(self, paragraph: Any) -> tuple[str, list[Any]]:
        boxes: list[Any] = []
        text = "".join(self._tokens(paragraph, boxes))
        lines = [" ".join(line.split()) for line in text.split("\n")]
        return "\n".join(line for line in lines if line), boxes

    # Blocks -------------------------------------------------------------------------------------------
    def paragraph(self, element: Any) -> list[str]:
        text, boxes = self.inline(element)
        ppr = element.find(W + "pPr")
        style = _val(ppr, W + "pStyle") or ""
        blocks = []
        if text:
            level = self.styles.levels.get(style)
            outline = _val(ppr, W + "outlineLvl")
            if outline is not None and outline.isdigit() and int(outline) < 9:
                level = int(outline) + 1
            numpr = ppr.find(W + "numPr") if ppr is not None else None
            num_id = _val(numpr, W + "numId") if numpr is not None else self.styles.style_numbering.get(style)
            if self.in_cell:
                blocks.append(text.replace("\n", " "))
            elif level:
                blocks.append("#" * min(level, 6) + " " + text.replace("\n", " "))
            elif num_id and num_id != "0":
                indent = int(_val(numpr, W + "ilvl") or 0) if numpr is not None else 0
                fmt = self.styles.formats.get((num_id, indent), "bullet")
                marker = "-" if fmt in _BULLETS else "1."
                blocks.append("  " * indent + f"{marker} " + text.replace("\n", " "))
            else:
                blocks.append(text)
        for box in boxes:
            blocks.extend(self.blocks(box))
        return blocks

    def blocks(self, container: Any) -> list[str]:
        out: list[str] = []
        for child in container:
            tag = child.tag
            if tag == W + "p":
                out.extend(self.paragraph(child))
            elif tag == W + "tbl":
                out.extend(self.table(child))
            elif tag in (W + "sdt", W + "customXml", W + "sdtContent", W + "ins", W + "smartTag"):
                out.extend(self.blocks(child.find(W + "sdtContent") if tag == W + "sdt" else child))
        return out

    def _cells(self, row: Any) -> Iterator[Any]:
        for child in row:
            if child.tag == W + "tc":
                yield child
            elif child.tag in (W + "sdt", W + "customXml"):
                content = child.find(W + "sdtContent") if child.tag == W + "sdt" else child
                yield from self._cells(content) if content is not None else ()

    def _rows(self, table: Any) -> Iterator[Any]:
        for child in table:
            if child.tag == W + "tr":
                yield child
            elif child.tag in (W + "sdt", W + "customXml"):
                content = child.find(W + "sdtContent") if child.tag == W + "sdt" else child
                yield from self._rows(content) if content is not None else ()

    def table(self, table: Any) -> list[str]:
        rows = [list(self._cells(row)) for row in self._rows(table)]
        nested = any(cell.find(".//" + W + "tbl") is not None for row in rows for cell in row)
        if nested or max((len(row) for row in rows), default=0) <= 1:
            return self._unwrap(rows)
        grid: list[list[str]] = []
        for row in rows:
            cells: list[str] = []
            for cell in row:
                tcpr = cell.find(W + "tcPr")
                span = int(_val(tcpr, W + "gridSpan") or 1) if tcpr is not None else 1
                vmerge = _val(tcpr, W + "vMerge") if tcpr is not None else None
                column = len(cells)
                if vmerge is not None and vmerge != "restart" and grid and column < len(grid[-1]):
                    # The continuation of a vertical merge repeats the value, so each row reads whole.
                    text = grid[-1][column]
                else:
                    self.in_cell += 1
                    text = "<br>".join(self.blocks(cell))
                    self.in_cell -= 1
                cells.extend([text] + [""] * (span - 1))
            grid.append(cells)
        table_text = markdown_table(grid)
        return [table_text] if table_text else []

    def _unwrap(self, rows: list[list[Any]]) -> list[str]:
        """A table used for layout (one column, or cells holding tables): its cells read as text."""
        out: list[str] = []
        for row in rows:
            if len(row) > 1 and all(cell.find(".//" + W + "tbl") is None for cell in row):
                texts = [" ".join(self.blocks(cell)) for cell in row]
                line = " | ".join(text for text in texts if text)
                if line:
                    out.append(line)
                continue
            for cell in row:
                out.extend(self.blocks(cell))
        return out


def _related_xml(document: Any, kind: str) -> Any | None:
    for rel in document.part.rels.values():
        if rel.reltype == f"{REL}/{kind}" and not rel.is_external:
            return parse_xml(rel.target_part.blob, kind)
    return None


def _notes(document: Any, renderer: Renderer) -> list[str]:
    lines = []
    for kind, tag, prefix in (("footnotes", "footnote", ""), ("endnotes", "endnote", "e")):
        root = _related_xml(document, kind)
        for note in root.iter(W + tag) if root is not None else ():
            if note.get(W + "type") in ("separator", "continuationSeparator", "continuationNotice"):
                continue
            text = " ".join(renderer.blocks(note)).strip()
            if text:
                lines.append(f"[^{prefix}{note.get(W + 'id')}]: {text}")
    return lines


# A header or footer that only numbers pages ("Page 3 of 12", "- 3 -", a PAGE field's cached "3") says
# nothing; anything else in one (a company, a document number, a revision, a classification) is kept.
_PAGE_NUMBER_ONLY = re.compile(
    r"^\W*(?:page|p\.|seite|página|pagina)?\s*\d*\s*(?:(?:of|/|von|de|sur)\s*\d+)?\W*$", re.I
)


def _headers_and_footers(document: Any, renderer: Renderer) -> list[str]:
    """The text of each distinct header and footer part that carries content, in the order of the parts."""
    lines: list[str] = []
    for rel in document.part.rels.values():
        if rel.is_external or rel.reltype not in (f"{REL}/header", f"{REL}/footer"):
            continue
        root = parse_xml(rel.target_part.blob, rel.reltype.rsplit("/", 1)[-1])
        text = " ".join(block.strip() for block in renderer.blocks(root) if block.strip())
        if text and not _PAGE_NUMBER_ONLY.match(text) and text not in lines:
            lines.append(text)
    return lines


def _comments(document: Any, renderer: Renderer) -> list[str]:
    root = _related_xml(document, "comments")
    lines = []
    for comment in root.iter(W + "comment") if root is not None else ():
        text = " ".join(renderer.blocks(comment)).strip()
        if text:
            author = comment.get(W + "author", "")
            lines.append(f"- {author}: {text}" if author else f"- {text}")
    return lines


class DocxParser(Parser):
    name = "python-docx"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == DOCX else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        import docx
        from docx.opc.exceptions import PackageNotFoundError

        check_office_zip(path)
        try:
            # python-docx opens a path-like too (a zip file or a folder), though it declares str only.
            document = docx.Document(open_package(path))  # type: ignore[arg-type]
        except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise corrupt(f"python-docx: {exc!r}") from exc
        renderer = Renderer(Styles(document))
        parts = [join_blocks(renderer.blocks(document.element.body))]
        margins = _headers_and_footers(document, renderer)
        if margins:
            parts.append("## Page headers and footers\n\n" + "\n".join(f"- {line}" for line in margins))
        notes = _notes(document, renderer)
        if notes:
            parts.append("## Notes\n\n" + "\n\n".join(notes))
        comments = _comments(document, renderer)
        if comments:
            parts.append("## Comments\n\n" + "\n".join(comments))
        return split_markdown("\n\n".join(part for part in parts if part.strip()))


class DocxXmlTextParser(Parser):
    """Paragraph text straight from the main part, for packages python-docx refuses to open."""

    name = "docx-xml"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 40 if sniffed_type == DOCX else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        check_office_zip(path)
        source = open_package(path)
        with zipfile.ZipFile(source) as archive:
            root_rels = parse_xml(archive.read("_rels/.rels"), "_rels/.rels")
            target = next(
                (
                    rel.get("Target", "")
                    for rel in root_rels
                    if rel.get("Type", "").endswith("/officeDocument")
                ),
                "word/document.xml",
            )
            body = parse_xml(archive.read(target.lstrip("/")), target)
        paragraphs = []
        for paragraph in body.iter(W + "p"):
            text = "".join(node.text or "" for node in paragraph.iter(W + "t"))
            if text.strip():
                paragraphs.append(text.strip())
        text = "\n\n".join(paragraphs)
        return [Segment(text)] if text else []
