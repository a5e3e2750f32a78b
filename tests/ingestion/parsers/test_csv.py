"""CSV: encodings, delimiters, NUL bytes and row numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.parsers.base import ParseError
from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers.documents import segments


def _parse(tmp_path: Path, data: bytes, name: str) -> list:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return parse_file(path, name)


def _texts(tmp_path: Path, data: bytes, name: str) -> list[str]:
    return [segment.text for segment in _parse(tmp_path, data, name)]


@pytest.mark.parametrize(
    ("encoding", "prefix"),
    [("utf-8", b""), ("utf-8-sig", b""), ("utf-16", b""), ("utf-16-le", b""), ("latin-1", b"")],
)
def test_csv_encodings_are_detected(tmp_path: Path, encoding: str, prefix: bytes) -> None:
    data = prefix + "ville;café;prix\nLyon;crème brûlée;4,50\nGenève;thé;3,20\n".encode(encoding)
    assert _texts(tmp_path, data, "menu.csv") == [
        "ville: Lyon | café: crème brûlée | prix: 4,50",
        "ville: Genève | café: thé | prix: 3,20",
    ]


def test_csv_nul_bytes_are_dropped(tmp_path: Path) -> None:
    data = b"name,score\nAda\x00,90\x00\nGrace,95\n"
    assert _texts(tmp_path, data, "scores.csv") == ["name: Ada | score: 90", "name: Grace | score: 95"]


def test_tab_separated_values(tmp_path: Path) -> None:
    data = b"id\tlabel\n1\tfirst, with a comma\n2\tsecond\n"
    assert _texts(tmp_path, data, "labels.tsv")[0] == "id: 1 | label: first, with a comma"


def test_csv_rows_know_their_numbers() -> None:
    rows = segments("csv/ks-1033-program-data.csv")
    assert len(rows) == 1575
    assert rows[0].meta["row"] == 2


@pytest.mark.parametrize("name", ["balances.csv", "balances", "balances.dat"])
def test_a_quoted_header_with_a_line_break_is_read_as_csv(tmp_path: Path, name: str) -> None:
    path = tmp_path / "upload"
    path.write_bytes(
        b'"Account\nnumber";"Holder name";"Balance\n(EUR)"\r\n'
        b'"1001";"Ann Lee";"120,50"\r\n"1002";"Bo Chan";"99,00"\r\n'
    )
    rows = [segment.text for segment in parse_file(path, name)]
    assert rows == [
        "Account number: 1001 | Holder name: Ann Lee | Balance (EUR): 120,50",
        "Account number: 1002 | Holder name: Bo Chan | Balance (EUR): 99,00",
    ]


def test_csv_with_quoted_newlines_in_header_and_cells_is_detected_by_parsing(tmp_path: Path) -> None:
    """Class (#52): a valid CSV under a name that does not say so, whose quoted header cell holds a
    newline and whose rows span three lines each. Read line by line it looked ragged (a record cut
    where the first 20 lines end) and was indexed as plain text; read as CSV records it is a table."""
    rows = "\n".join(
        f'Acme {i},{i}.25,"Delivered to the north depot,\nsigned by the night shift,\nno damage",Fuel'
        for i in range(300)
    )
    data = ('"Payee\nName",Amount,Notes,Category\n\n' + rows + "\n").encode()
    parsed = _parse(tmp_path, data, "export")
    assert len(parsed) == 300 and all("row" in segment.meta for segment in parsed)
    assert parsed[0].text == (
        "Payee Name: Acme 0 | Amount: 0.25 | Notes: Delivered to the north depot, signed by the night "
        "shift, no damage | Category: Fuel"
    )


def test_two_sentences_with_a_comma_each_are_not_a_table(tmp_path: Path) -> None:
    data = b"Thanks for the call, Maria.\nSee you on Monday, as agreed.\n"
    parsed = _parse(tmp_path, data, "note")
    assert [segment.text for segment in parsed] == [
        "Thanks for the call, Maria.\nSee you on Monday, as agreed."
    ]


@pytest.mark.parametrize("name", ["payees.csv", "payees.tsv", "payees", "payees.dat"])
def test_a_small_csv_whose_header_cell_holds_a_vertical_tab_line_break_is_a_table(
    tmp_path: Path, name: str
) -> None:
    """Class (#52): "a valid CSV whose quoted header cell holds a newline is refused as 'This file type
    is not supported'". FileMaker exports a line break inside a field as a vertical tab, and Word and
    PowerPoint text pasted into a cell brings its soft line breaks as vertical tabs. One in a 50-byte
    file was over the share of control bytes that tells binary from text, so the file was sniffed as
    application/octet-stream and refused before any parser saw it."""
    delimiter = "\t" if name.endswith(".tsv") else ","
    data = delimiter.join(['"Payee\vname"', '"Amount\v(EUR)"']) + "\nAcme\t12.50\nBeta\t7.00\n"
    data = data.replace("\t", delimiter).encode()
    assert [segment.text for segment in _parse(tmp_path, data, name)] == [
        "Payee name: Acme | Amount (EUR): 12.50",
        "Payee name: Beta | Amount (EUR): 7.00",
    ]


def test_a_vertical_tab_in_plain_text_is_a_line_break(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, b"Opening hours\vMonday to Friday, 9 to 5", "hours.txt")
    assert [segment.text for segment in parsed] == ["Opening hours\nMonday to Friday, 9 to 5"]


def test_binary_bytes_are_still_refused_as_unsupported(tmp_path: Path) -> None:
    """The other side of the line: bytes full of control characters are not text whatever the name."""
    with pytest.raises(ParseError) as refused:
        _parse(tmp_path, bytes(range(1, 32)) * 8 + b"a,b\n1,2\n", "table.csv")
    assert refused.value.reason == "unsupported"
