"""Vectors a re-index keeps: text of a document that was embedded before and has not changed.

A page edited in one paragraph is re-indexed whole (its chunks are replaced at once, indexing.py), yet
most of its chunks, and most sentences of the others, are the same text as before. Their vectors are read
back (the chunk's from the store, its sentences' from the row) instead of being embedded again, which is
most of what a re-sync of an edited site costs.

Each chunk records a digest of exactly what was embedded for it: its input and its sentence units, in
order. An old chunk's vectors are used only when the texts rebuilt today from its stored text and the
document's current title give that digest, so a changed title, segmenter or setting leaves its vectors
unknown rather than wrong, and only vectors of the same model are read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from django.conf import settings

from ingestion.text.sentence_inputs import Layout, sentence_texts
from retrieval.embedders.base import Embedder
from retrieval.sentences import unpack
from retrieval.vectors import embedding_input, stored_chunk_vectors
from sources.models import Chunk, Document


def digest(chunk_input: str, units: Sequence[str] | None) -> str:
    """What was embedded for one chunk; `units` None when no sentence vectors were made."""
    sentences = "-" if units is None else "\x1f".join(units)
    return hashlib.blake2b(f"{chunk_input}\x1e{sentences}".encode(), digest_size=16).hexdigest()


def mark(chunks: list[Chunk], inputs: list[str], layout: Layout | None) -> None:
    """Record on each chunk what is embedded for it: its input, then its sentences' rows (`layout`)."""
    for n, chunk in enumerate(chunks):
        units = None if layout is None else [inputs[row] for row in layout[n]]
        chunk.input_digest = digest(inputs[n], units)


def known_vectors(documents: list[Document], embedder: Embedder) -> dict[int, dict[str, np.ndarray]]:
    """By document id, the vectors `embedder`'s model made for texts of the documents' current chunks
    whose digest still holds, by text (chunk inputs and sentence units alike). Empty unless the
    deployment reuses vectors (settings.REINDEX_REUSES_VECTORS)."""
    if not documents or not settings.REINDEX_REUSES_VECTORS:
        return {}
    titles = {d.id: d.title for d in documents}
    rows = (
        Chunk.objects.filter(document_id__in=list(titles), embedding_model=embedder.model_name)
        .exclude(input_digest="")
        .values_list("id", "document_id", "text", "input_digest", "sentence_vectors")
    )
    verified = []
    for chunk_id, document_id, text, stored, packed in rows:
        title = titles[document_id]
        chunk_input = embedding_input(text, title)
        units = sentence_texts(text, title)
        if packed is not None and stored == digest(chunk_input, units):
            sentences = unpack(packed, embedder.dimensions)
            if len(sentences) != len(units):
                continue
            verified.append(
                (str(chunk_id), document_id, chunk_input, dict(zip(units, sentences, strict=True)))
            )
        elif stored in (digest(chunk_input, None), digest(chunk_input, [])):
            verified.append((str(chunk_id), document_id, chunk_input, {}))
    if not verified:
        return {}
    workspace_id = documents[0].workspace_id
    vectors = stored_chunk_vectors(
        workspace_id=workspace_id, chunk_ids=[v[0] for v in verified], embedder=embedder
    )
    known: dict[int, dict[str, np.ndarray]] = {}
    for _, document_id, _, by_sentence in verified:
        known.setdefault(document_id, {}).update(by_sentence)
    # Then the chunks' own, stored at full precision (sentences are kept as float16), so they win where a
    # chunk's input is also some chunk's sentence.
    for chunk_id, document_id, chunk_input, _ in verified:
        vector = vectors.get(chunk_id)
        if vector is not None and len(vector) == embedder.dimensions:
            known[document_id][chunk_input] = vector
    return known
