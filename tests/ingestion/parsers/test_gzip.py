"""Gzipped uploads: decompressed within the bomb limits and parsed as what they hold, or refused with the
reason."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ingestion.parsers.base import ParseError
from ingestion.parsers.registry import parse_file

ARTICLE = (
    "<!doctype html><html lang='en'><head><title>Returns policy</title></head><body><nav>Home | Shop</nav>"
    "<article><h1>Returns policy</h1>"
    + "".join(
        f"<p>Part {i}: any unworn item can be returned within 30 days of delivery for a full refund, "
        "paid to the original payment method within five business days.</p>"
        for i in range(4)
    )
    + "</article><footer>© Shop</footer></body></html>"
)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_gzipped_html_page_is_read_as_html(tmp_path: Path) -> None:
    path = _write(tmp_path, "upload", gzip.compress(ARTICLE.encode()))
    parsed = parse_file(path, "returns.html.gz")
    text = "\n".join(segment.text for segment in parsed)
    assert "returned within 30 days" in text and "Home | Shop" not in text
    assert parsed[0].meta["compressed"] == "gzip" and parsed[0].meta["content_type"] == "text/html"


def test_a_gzip_bomb_is_refused_as_such(tmp_path: Path) -> None:
    # 30 MB of zeros packs into ~30 KB: past 20 MB, a ratio over 100:1 is a bomb.
    path = _write(tmp_path, "upload", gzip.compress(b"\0" * (30 * 1024 * 1024)))
    with pytest.raises(ParseError) as caught:
        parse_file(path, "page.html.gz")
    assert caught.value.reason == "zip_bomb"
    assert "bomb" in str(caught.value).lower()


def test_a_truncated_gzip_is_reported_corrupt(tmp_path: Path) -> None:
    data = gzip.compress(ARTICLE.encode() * 20)
    path = _write(tmp_path, "upload", data[: len(data) // 2])
    with pytest.raises(ParseError) as caught:
        parse_file(path, "page.html.gz")
    assert caught.value.reason == "corrupt"


def test_a_gzip_inside_a_gzip_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "upload", gzip.compress(gzip.compress(ARTICLE.encode())))
    with pytest.raises(ParseError) as caught:
        parse_file(path, "page.html.gz.gz")
    assert "compressed twice" in str(caught.value)
