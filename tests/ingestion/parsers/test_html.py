"""HTML: main content as for crawled pages, all visible text as the fallback."""

from __future__ import annotations

from pathlib import Path

from ingestion.parsers.registry import parse_file
from tests.ingestion.parsers.documents import segments


def _parse(tmp_path: Path, data: bytes, name: str) -> list:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return parse_file(path, name)


def _texts(tmp_path: Path, data: bytes, name: str) -> list[str]:
    return [segment.text for segment in _parse(tmp_path, data, name)]


def test_html_main_content_drops_navigation_and_footer(tmp_path: Path) -> None:
    body = " ".join(["The harbour reopened on Monday after the storm damaged two piers."] * 4)
    html = (
        "<html><head><title>Harbour news</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About us</a> <a href='/shop'>Shop now</a></nav>"
        f"<article><h1>Harbour reopens</h1><p>{body}</p><p>Ferries run hourly again.</p></article>"
        "<footer>Copyright 2024 Example Media. All rights reserved.</footer></body></html>"
    ).encode()
    extracted = "\n".join(_texts(tmp_path, html, "page.html"))
    assert "Ferries run hourly again." in extracted
    assert "Shop now" not in extracted
    assert "All rights reserved" not in extracted


def test_html_that_is_not_an_article_falls_back_to_all_visible_text() -> None:
    page = segments("html/utf8-page.html")
    assert page[0].meta["parser"] == "html-text"
    assert "STARGΛ̊TE SG-1" in "\n".join(segment.text for segment in page)
