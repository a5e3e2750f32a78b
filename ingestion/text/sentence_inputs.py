"""What an index job embeds besides its chunks when the deployment makes sentence vectors.

Each chunk's quotable units (ingestion.text.segment: sentences, list items, table rows, headings, code lines)
and its document's title, each unique text of a document embedded once, in the same pass and batches as
the chunks. The vectors are packed onto the chunk rows (retrieval.sentences) before they are written.
"""

from __future__ import annotations

import numpy as np
from django.conf import settings

from ingestion.text.segment import segment
from retrieval.sentences import pack
from sources.models import Chunk

# A unit shorter than this ("Note:", "}") says too little to match a question on its own.
MIN_CHARS = 12
# A chunk of code lines or table rows could make hundreds of units; past this many the rest are left out.
MAX_PER_CHUNK = 48

#: Per chunk, the rows of the job's inputs that hold its sentences' vectors.
Layout = list[list[int]]


def sentence_texts(text: str, title: str) -> list[str]:
    units = [title.strip()] if title.strip() else []
    units += [u.text for u in segment(text)]
    kept = list(dict.fromkeys(u for u in units if len(u) >= MIN_CHARS))
    return kept[:MAX_PER_CHUNK]


def with_sentences(texts: list[str], inputs: list[str], title: str) -> tuple[list[str], Layout | None]:
    """`inputs` (one per chunk of these `texts`) followed by the document's sentences, and where each
    chunk's are; the inputs alone and no layout when sentence vectors are off."""
    if not settings.SENTENCE_VECTORS:
        return inputs, None
    extended, row_of, layout = list(inputs), {}, []
    for chunk_text in texts:
        rows = []
        for text in sentence_texts(chunk_text, title):
            if text not in row_of:
                row_of[text] = len(extended)
                extended.append(text)
            rows.append(row_of[text])
        layout.append(rows)
    return extended, layout


def attach(chunks: list[Chunk], vectors: np.ndarray, layout: Layout | None) -> np.ndarray:
    """Put each chunk's sentence vectors on it; returns the chunks' own vectors."""
    if layout is not None:
        for chunk, rows in zip(chunks, layout, strict=True):
            chunk.sentence_vectors = pack(vectors[rows])
    return vectors[: len(chunks)]
