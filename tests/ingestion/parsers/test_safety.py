"""Zip bombs and entity expansion are refused before anything is unpacked or parsed."""

from __future__ import annotations

import codecs
from pathlib import Path

import openpyxl
import pytest

from ingestion.parsers.base import ParseError
from ingestion.parsers.registry import parse_file
from ingestion.parsers.safety import xml_has_dtd
from tests.ingestion.parsers import builders


def _file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return path


def test_zip_bomb_is_refused_from_its_directory(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as caught:
        parse_file(_file(tmp_path, builders.zip_bomb_docx(64)), "report.docx")
    assert caught.value.reason == "zip_bomb"
    assert caught.value.message.startswith("Zip bomb:")
    assert "times its size" in caught.value.message


def test_zip_that_declares_an_enormous_member_is_refused(tmp_path: Path) -> None:
    data = builders.lying_zip_directory(builders.docx_bytes(["Hello"]), "word/document.xml", 3 * 1024**3)
    with pytest.raises(ParseError) as caught:
        parse_file(_file(tmp_path, data), "report.docx")
    assert caught.value.reason == "zip_bomb"


def test_billion_laughs_inside_a_docx_is_refused(tmp_path: Path) -> None:
    data = builders.rewrite_zip(
        builders.docx_bytes(["Hello"]), {"word/document.xml": builders.BILLION_LAUGHS}
    )
    with pytest.raises(ParseError) as caught:
        parse_file(_file(tmp_path, data), "report.docx")
    assert caught.value.reason == "unsafe_xml"
    assert "billion laughs" in caught.value.message


def test_billion_laughs_inside_an_xlsx_is_refused(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    workbook.active.append(["a", 1])
    plain = tmp_path / "plain.xlsx"
    workbook.save(plain)
    laughs = builders.BILLION_LAUGHS.replace(b"w:document", b"sst")
    data = builders.rewrite_zip(plain.read_bytes(), {}, extra={"xl/sharedStrings.xml": laughs})
    with pytest.raises(ParseError) as caught:
        parse_file(_file(tmp_path, data), "book.xlsx")
    assert caught.value.reason == "unsafe_xml"


@pytest.mark.parametrize(
    "head",
    [
        b'<?xml version="1.0"?>\n<!-- a comment first -->\n<!DOCTYPE x [<!ENTITY a "b">]><x/>',
        codecs.BOM_UTF16_LE + '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x><x/>'.encode("utf-16-le"),
        codecs.BOM_UTF8 + b"<!DOCTYPE x SYSTEM 'http://example.invalid/x.dtd'><x/>",
    ],
)
def test_a_dtd_is_found_behind_comments_boms_and_utf16(head: bytes) -> None:
    assert xml_has_dtd(head)


def test_a_dtd_like_string_inside_the_content_is_not_a_dtd() -> None:
    assert not xml_has_dtd(b'<?xml version="1.0"?><w:t>&lt;!DOCTYPE html&gt; is text</w:t>')


def test_uploader_filename_is_never_used_as_a_path(tmp_path: Path) -> None:
    path = _file(tmp_path, b"Plain words.\n")
    for hostile in ("../../../etc/passwd.txt", "C:\\Windows\\system.ini.txt", "/dev/zero", "-rf .md"):
        (segment,) = parse_file(path, hostile)
        assert segment.text == "Plain words."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["upload.bin"]
