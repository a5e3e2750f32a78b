"""A Google Doc's plain-text export -> the document's text: its title first, line ends unified, runs of
blank lines squeezed (Drive's text/plain export keeps headings as lines, list items with their bullets,
tables as tab-separated rows)."""

from __future__ import annotations

from integrations.notion.render import tidy


def doc_text(title: str, exported: str) -> str:
    body = exported.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = [title, ""] + [line.replace("\t", " | ") for line in body.split("\n")]
    return tidy(lines)
