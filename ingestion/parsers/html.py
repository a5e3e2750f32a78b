"""HTML: the main content, as for crawled pages, through trafilatura; all visible text as the fallback.

trafilatura drops navigation, footers and boilerplate and returns Markdown with headings and tables, which
is then split on H1/H2 like any Markdown file. Pages whose content it does not recognise as an article
(a preformatted text dump, a status page) fall through to the second parser, which keeps every visible
line.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingestion.parsers.base import ParseError, ParseOptions, Parser, Segment
from ingestion.parsers.text import MAX_TEXT_BYTES, split_markdown

HTML = "text/html"


def _read(path: Path) -> bytes:
    size = path.stat().st_size
    if size > MAX_TEXT_BYTES:
        raise ParseError(
            "The HTML file is too large to index. Split it into files under 64 MB.",
            f"{size} bytes > {MAX_TEXT_BYTES}",
            reason="too_large",
            final=True,
        )
    # Bytes, not text: trafilatura reads the page's own charset declaration.
    return path.read_bytes()


def metadata_title(data: str | bytes) -> str:
    """trafilatura's guess at the title (og:title, <title>, a lone <h1>); "" when it finds none."""
    import trafilatura

    # trafilatura reads bytes too (its load_html decodes them), though it declares str or a tree.
    metadata = trafilatura.extract_metadata(data)  # type: ignore[arg-type]
    return (metadata.title or "").strip() if metadata is not None else ""


def main_content_markdown(html: str | bytes) -> str | None:
    """The page's main content as Markdown, as trafilatura keeps it for crawled pages and pushed HTML alike:
    tables kept, comments, images and links dropped, recall favoured over precision."""
    import trafilatura

    return trafilatura.extract(
        html,
        output_format="markdown",
        include_tables=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        favor_recall=True,
    )


class HtmlParser(Parser):
    name = "trafilatura"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 100 if sniffed_type == HTML else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        data = _read(path)
        text = main_content_markdown(data)
        if not text or not text.strip():
            return []
        segments = split_markdown(text)
        title = metadata_title(data)
        if segments and not segments[0].title and title:
            segments[0].title = title
        return segments


class HtmlTextParser(Parser):
    name = "html-text"

    def score(self, sniffed_type: str, filename: str) -> int:
        return 50 if sniffed_type == HTML else 0

    def parse(self, path: Path, filename: str, options: ParseOptions) -> list[Segment]:
        import lxml.html
        from lxml_html_clean import Cleaner

        data = _read(path)
        try:
            tree = lxml.html.document_fromstring(data)
        except (ValueError, lxml.etree.ParserError) as exc:
            raise ParseError("The HTML file could not be read.", f"lxml: {exc}", reason="corrupt") from exc
        # Scripts, styles and forms are not content; the cleaner also drops comments and processing hints.
        cleaner = Cleaner(scripts=True, javascript=True, style=True, forms=True, comments=True)
        cleaned = cleaner.clean_html(tree)
        for block in cleaned.iter("p", "div", "li", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6", "pre"):
            block.tail = ("\n" + block.tail) if block.tail else "\n"
        for level in range(1, 7):
            for heading in cleaned.iter(f"h{level}"):
                heading.text = "#" * level + " " + (heading.text or "") if level <= 2 else heading.text
        lines = [line.rstrip() for line in cleaned.text_content().split("\n")]
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        segments = split_markdown(text)
        title = metadata_title(data)
        if segments and not segments[0].title and title:
            segments[0].title = title
        return segments
