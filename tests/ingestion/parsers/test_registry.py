"""Choosing a parser by content, scoring, and handing over to the next parser on failure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingestion.parsers import pdf
from ingestion.parsers.base import ParseError
from ingestion.parsers.registry import detect_type, parse_file, parsers_for, sniff
from tests.ingestion.parsers import builders
from tests.ingestion.parsers.documents import document

ODT = "application/vnd.oasis.opendocument.text"


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b"%PDF-1.7\n", "notes.txt", "application/pdf"),
        (b"\x00\x00junk%PDF-1.4\n", "x", "application/pdf"),
        (b"# Release notes\n\nFiles now start with %PDF-2.0 headers.\n", "NOTES.md", "text/markdown"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "x.docx", "application/x-ole-storage"),
        (b"PK\x03\x04" + bytes(26) + b"mimetypeapplication/vnd.oasis.opendocument.text", "x.zip", ODT),
        (b"\x89PNG\r\n\x1a\n" + bytes(20), "scan.pdf", "image/png"),
        (b"<!DOCTYPE html><html><body>x</body></html>", "page.txt", "text/html"),
        (b"a,b,c\n1,2,3\n4,5,6\n", "export", "text/csv"),
        (b"a,b,c\n1,2,3\n", "notes.txt", "text/plain"),
        (b"# Title\n\nBody", "README.md", "text/markdown"),
        (b"", "empty.pdf", "application/x-empty"),
        (bytes(range(256)) * 4, "data.csv", "application/octet-stream"),
    ],
)
def test_sniff_trusts_bytes_over_names(head: bytes, name: str, expected: str) -> None:
    assert sniff(head, name) == expected


def test_container_contents_tell_docx_from_xlsx_and_ole_formats() -> None:
    assert detect_type(document("docx/renamed-main-part.docx"), "x.bin").endswith("wordprocessingml.document")
    assert detect_type(document("xlsx/utf8.xlsx"), "x.bin").endswith("spreadsheetml.sheet")
    assert detect_type(document("xlsx/password-protected.xlsx"), "x.xlsx") == "application/x-ooxml-encrypted"


@pytest.mark.parametrize(
    ("source", "lying_name", "expected"),
    [
        ("pdf/multicolumn-latex.pdf", "minutes.docx", "Two-Column Document with Lorem Ipsum"),
        ("docx/zen-of-python.docx", "scan.pdf", "Explicit is better than implicit."),
        ("xlsx/utf8.xlsx", "table.csv", "A: こんにちは | B: Japanese language"),
        ("csv/acs2012-5yr-population.csv", "numbers.xlsx", "name: Adams County, NE"),
        ("html/apache-default.html", "status.txt", "Server Version: Apache/2.4.7"),
    ],
)
def test_content_wins_over_a_lying_extension(
    tmp_path: Path, source: str, lying_name: str, expected: str
) -> None:
    path = tmp_path / "upload.bin"
    shutil.copyfile(document(source), path)
    extracted = "\n\n".join(segment.text for segment in parse_file(path, lying_name))
    assert expected in extracted


def test_best_scored_parser_tries_first() -> None:
    names = [parser.name for parser in parsers_for("application/pdf", "x.pdf")]
    assert names == ["pdfium-layout", "pypdf"]
    assert [p.name for p in parsers_for("text/csv", "x.csv")] == ["csv", "text"]


def test_a_failing_parser_hands_over_to_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: object, *args: object) -> list:
        raise RuntimeError("pdfminer tripped over something")

    monkeypatch.setattr(pdf.PdfParser, "parse", broken)
    parsed = parse_file(document("pdf/multicolumn-latex.pdf"), "paper.pdf")
    assert parsed[0].meta["parser"] == "pypdf"
    assert "Two-Column Document with Lorem Ipsum" in parsed[0].text


def test_when_every_parser_fails_the_most_specific_reason_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: object, *args: object) -> list:
        raise RuntimeError("boom")

    monkeypatch.setattr(pdf.PdfParser, "parse", broken)
    monkeypatch.setattr(pdf.PypdfTextParser, "parse", broken)
    with pytest.raises(ParseError) as caught:
        parse_file(document("pdf/multicolumn-latex.pdf"), "paper.pdf")
    assert caught.value.reason == "corrupt"
    assert "pdfium-layout: RuntimeError: boom" in caught.value.detail
    assert "pypdf: RuntimeError: boom" in caught.value.detail


def test_a_final_failure_stops_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real_parse = pdf.PypdfTextParser.parse

    def spy(self: pdf.PypdfTextParser, *args: object) -> list:
        calls.append("pypdf")
        return real_parse(self, *args)

    monkeypatch.setattr(pdf.PypdfTextParser, "parse", spy)
    with pytest.raises(ParseError, match="password protected"):
        parse_file(document("pdf/encrypted-libreoffice-openpassword.pdf"), "locked.pdf")
    assert calls == []


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"", "empty"), (b"\x89PNG\r\n\x1a\n" + bytes(64), "unsupported"), (b"{\\rtf1 hello}", "unsupported")],
)
def test_unsupported_and_empty_files_say_so(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    with pytest.raises(ParseError) as caught:
        parse_file(path, "upload.pdf")
    assert caught.value.reason == reason


def test_docx_from_python_docx_is_sniffed_from_its_first_bytes() -> None:
    head = builders.docx_bytes(["x"])[:8192]
    assert sniff(head, "x").endswith("wordprocessingml.document")
