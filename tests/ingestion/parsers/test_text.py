"""Markdown and plain text: sections at H1/H2 headings."""

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


def test_markdown_is_split_on_h1_and_h2_but_not_inside_code(tmp_path: Path) -> None:
    data = (
        b"Intro line.\n\n# Install\n\nRun it.\n\n```sh\n# not a heading\n```\n\n"
        b"### Deeper stays inside\n\nUsage\n-----\n\nCall it.\n"
    )
    parsed = _parse(tmp_path, data, "README.md")
    assert [segment.title for segment in parsed] == ["", "Install", "Usage"]
    assert "# not a heading" in parsed[1].text
    assert "### Deeper stays inside" in parsed[1].text
    assert parsed[2].text == "## Usage\n\nCall it."


def test_plain_text_without_headings_is_one_segment(tmp_path: Path) -> None:
    assert _texts(tmp_path, b"Line one.\r\nLine two.\r\n", "notes.txt") == ["Line one.\nLine two."]


def test_markdown_changelog_sections() -> None:
    titles = [segment.title for segment in segments("md/pypdf-CHANGELOG.md")]
    assert titles[:3] == ["CHANGELOG", "Version 7.1.1, 2026-11-18", "Version 7.1.0, 2026-11-13"]
