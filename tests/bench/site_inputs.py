"""What an index job embeds for a site's pages, made in the bench's own process from the page files: the
same extraction, chunking and sentence inputs as ingestion, so a bench can embed or segment them without
a crawl."""

from __future__ import annotations

from pathlib import Path

from ingestion.chunk_settings import default_chunking
from ingestion.crawl.extract import DroppedPage, extract_page
from ingestion.text import sentence_inputs
from retrieval.vectors import embedding_input
from tests.ingestion.conftest import flask_page_paths
from tests.ingestion.crawl.servers import FLASK_DOCS


def site_chunks(pages: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(title, chunk texts) of each page (url -> file) the crawl keeps, in order."""
    documents = []
    for url, path in pages.items():
        try:
            page = extract_page(path.read_bytes(), url)
        except DroppedPage:
            continue
        texts = [piece.text for piece in default_chunking({}).chunks(page.text)]
        documents.append(((page.title or url)[:500], texts))
    return documents


def flask_chunks() -> list[tuple[str, list[str]]]:
    """The shared Flask docs' pages, as `site_chunks` gives them."""
    return site_chunks({f"http://127.0.0.1/{p}": FLASK_DOCS / p for p in flask_page_paths()})


def flask_paragraphs() -> list[str]:
    """Every paragraph and list item of the shared Flask docs' chunks, as `segment.blocks` cuts them: what
    goes to the sentence splitter."""
    from ingestion.text.segment import ITEM, PROSE, blocks

    return [
        body
        for _, chunks in flask_chunks()
        for chunk in chunks
        for kind, body in blocks(chunk)
        if kind in (PROSE, ITEM)
    ]


def flask_inputs_by_page() -> list[list[str]]:
    """What an index job embeds for each of the shared Flask docs' pages (`embedding_inputs`), in order."""
    return [embedding_inputs(texts, title) for title, texts in flask_chunks()]


def embedding_inputs(texts: list[str], title: str) -> list[str]:
    """What an index job embeds for one document's chunks: their inputs, and their sentences where the
    deployment makes sentence vectors (settings.SENTENCE_VECTORS)."""
    chunk_inputs = [embedding_input(text, title) for text in texts]
    return sentence_inputs.with_sentences(texts, chunk_inputs, title)[0]
