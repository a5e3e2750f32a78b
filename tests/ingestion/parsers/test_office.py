"""DOC, XLS, ODT and ODS, from files made during the test (odfpy, then LibreOffice for DOC and XLS)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingestion.parsers import office
from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers import builders

needs_libreoffice = pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice (soffice) makes the DOC and XLS fixtures"
)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    workdir = tmp_path_factory.mktemp("office")
    files = {"odt": builders.odt(workdir / "report.odt"), "ods": builders.ods(workdir / "sales.ods")}
    if shutil.which("soffice"):
        files["doc"] = builders.soffice_convert(files["odt"], "doc", workdir)
        files["xls"] = builders.soffice_convert(files["ods"], "xls", workdir)
    return files


def _texts(path: Path, name: str) -> list[str]:
    return [segment.text for segment in parse_file(path, name)]


def test_odt_headings_lists_tables_and_notes(made: dict[str, Path]) -> None:
    parsed = parse_file(made["odt"], "report.odt")
    assert [segment.title for segment in parsed] == ["Quarterly Report", "Regions", "Notes"]
    assert parsed[0].text == "# Quarterly Report\n\nRevenue grew in the northern region.[^1]"
    assert "- North: strong\n- South: flat" in parsed[1].text
    assert "| Region | Sales |\n|---|---|\n| North | 1200 |" in parsed[1].text
    assert parsed[2].text.endswith("[^1]: Audited figures.")


def test_ods_typed_cells_title_row_and_hidden_sheet(made: dict[str, Path]) -> None:
    parsed = parse_file(made["ods"], "sales.ods")
    assert [segment.text for segment in parsed] == [
        "Sales by region, 2023",
        "Region: North | Closed on: 2023-03-31 | Amount: 1200.5",
        "Region: South | Closed on: 2023-06-30 | Amount: 800",
    ]
    assert {segment.meta["sheet"] for segment in parsed} == {"Sales"}


@needs_libreoffice
def test_doc_is_read_by_antiword(made: dict[str, Path]) -> None:
    (segment,) = parse_file(made["doc"], "report.doc")
    assert segment.meta["parser"] == "antiword"
    assert "Revenue grew in the northern region." in segment.text
    assert "|North |1200 |" in segment.text
    assert "Audited figures." in segment.text


@needs_libreoffice
def test_doc_falls_back_to_catdoc_when_antiword_is_missing(
    made: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(office.shutil, "which", lambda name: None if name == "antiword" else real_which(name))
    (segment,) = parse_file(made["doc"], "report.doc")
    assert segment.meta["parser"] == "catdoc"
    assert "Revenue grew in the northern region." in segment.text


@needs_libreoffice
def test_doc_falls_back_to_libreoffice_when_both_tools_fail(
    made: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(
        office.shutil, "which", lambda name: None if name in ("antiword", "catdoc") else real_which(name)
    )
    parsed = parse_file(made["doc"], "report.doc")
    assert parsed[0].meta["parser"] == "libreoffice"
    assert "# Quarterly Report" in parsed[0].text


@needs_libreoffice
def test_xls_dates_header_and_hidden_sheet(made: dict[str, Path]) -> None:
    parsed = parse_file(made["xls"], "sales.xls")
    assert parsed[0].meta["parser"] == "xlrd"
    assert [segment.text for segment in parsed] == [
        "Sales by region, 2023",
        "Region: North | Closed on: 2023-03-31 | Amount: 1200.5",
        "Region: South | Closed on: 2023-06-30 | Amount: 800",
    ]


def test_a_word_file_that_is_not_one_fails_as_corrupt(tmp_path: Path) -> None:
    import olefile  # noqa: F401 - the sniffer needs it; this guards a missing install with a clear error

    path = tmp_path / "broken.doc"
    # An OLE header with nothing behind it: recognised as OLE, unreadable as anything.
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    from ingestion.parsers.base import ParseError

    with pytest.raises(ParseError) as caught:
        parse_file(path, "broken.doc")
    assert caught.value.reason == "unsupported"
