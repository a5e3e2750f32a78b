"""DOCX: Markdown structure, merged and nested tables, notes, comments, text boxes, Strict OOXML."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers import builders
from tests.ingestion.parsers.documents import segments, text


def _parse_bytes(tmp_path: Path, data: bytes, name: str = "upload.docx") -> list:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return parse_file(path, name)


def test_headings_become_markdown_and_split_segments() -> None:
    zen = segments("docx/zen-of-python.docx")
    assert zen[1].title == "Beautiful is better than ugly."
    assert zen[1].text.startswith("# Beautiful is better than ugly.\n\nExplicit is better than implicit.")


def test_nested_bullets_keep_their_levels() -> None:
    assert "- What's the meaning of life, universe and everything?\n  - 42\n  - 0\n  - -1" in text(
        "docx/apple-pages-bulleted-lists.docx"
    )


def test_merged_cells_repeat_down_and_leave_spanned_columns_empty() -> None:
    table = text("docx/merged-cells.docx")
    # 12-0 spans two rows and 34-123 spans two rows and three columns.
    assert "| 0-0 | 0-12 |  | 0-3 |" in table
    assert "| 12-0 | 1-1 | 1-2 | 1-3 |\n| 12-0 | 2-1 | 2-2 | 2-3 |" in table
    assert "| 3-0 | 34-123 |  |  |\n| 4-0 | 34-123 |  |  |" in table


def test_nested_tables_become_markdown_tables_of_their_own() -> None:
    extracted = text("docx/oilfield-procedure-nested-tables.docx")
    assert "| Step | Work Activity | Known Hazards | Base Line Control |\n|---|---|---|---|" in extracted
    assert "| 1 | Check elevator and slip size and condition.<br>Verify correct sizes" in extracted


def test_checkbox_states_are_kept() -> None:
    extracted = text("docx/checkbox-form-tables.docx")
    assert "☐ Urgent ☐ Routine" in extracted
    assert "☒ Law Enforcement" in extracted


def test_footnotes_land_in_a_notes_section() -> None:
    notes = segments("docx/footnotes.docx")[-1]
    assert notes.title == "Notes"
    assert "[^2]: Fin." in notes.text


def test_text_box_is_read_once_and_comments_are_kept(tmp_path: Path) -> None:
    parsed = _parse_bytes(tmp_path, builders.docx_with_text_box_and_comment())
    extracted = "\n\n".join(segment.text for segment in parsed)
    assert extracted.count("Callout: asbestos found in boiler room") == 1
    assert "# Site Survey" in extracted
    comments = next(segment for segment in parsed if segment.title == "Comments")
    assert "- Dana: Check the east wing numbers again." in comments.text


def test_strict_ooxml_document_is_read(tmp_path: Path) -> None:
    data = builders.strict_docx(["Strict conformance keeps its text."])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert b"purl.oclc.org/ooxml/wordprocessingml/main" in archive.read("word/document.xml")
    parsed = _parse_bytes(tmp_path, data)
    assert "Strict conformance keeps its text." in parsed[0].text


def test_a_package_python_docx_refuses_falls_back_to_the_raw_text(tmp_path: Path) -> None:
    original = builders.docx_bytes(["Recovered from a damaged package."])
    # Without [Content_Types].xml python-docx cannot find the document part; the fallback follows _rels.
    damaged = builders.rewrite_zip(original, {})
    damaged = _without_member(damaged, "[Content_Types].xml")
    parsed = _parse_bytes(tmp_path, damaged)
    assert parsed[0].text == "Recovered from a damaged package."
    assert parsed[0].meta["parser"] == "docx-xml"


def _without_member(data: bytes, name: str) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        for member in source.infolist():
            if member.filename != name:
                target.writestr(member, source.read(member))
    return buffer.getvalue()


def test_page_headers_and_footers_are_kept_when_they_carry_content(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("Isolate the pump before opening the valve housing.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Acme Water — Procedure QP-12, revision 4"
    section.footer.paragraphs[0].text = "Page 1 of 3"  # a page number only: nothing to keep
    section.different_first_page_header_footer = True
    section.first_page_header.paragraphs[0].text = "Acme Water — Procedure QP-12, revision 4"  # once
    path = tmp_path / "procedure.docx"
    document.save(path)
    text = "\n".join(segment.text for segment in parse_file(path, "procedure.docx"))
    assert "Isolate the pump" in text
    assert text.count("Procedure QP-12, revision 4") == 1
    assert "Page 1 of 3" not in text
