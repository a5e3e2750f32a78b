"""The embedding planner of an index job: which texts go to the embedder together, in which order, and when a
document has all its vectors and can be stored (ingestion/indexing.py stores it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import numpy as np
from django.conf import settings

from ingestion.text import sentence_inputs
from retrieval.embedders.base import Embedder
from sources.models import Chunk, Document

#: A document ready to embed: its chunks, their embedding inputs followed by their sentences' (when the
#: deployment makes sentence vectors), and where each chunk's sentences are among them (None until
#: Waiting.add_sentences has cut them, or without sentence vectors).
Prepared = tuple[Document, list[Chunk], list[str], sentence_inputs.Layout | None]


class Waiting:
    """A job's documents waiting for their vectors. Their texts are embedded in parts of one batch of the
    embedder (a provider's: one request of EMBED_BATCH_SIZE), cut from one order by size (the embedder's
    tokens) across every document of the job, as one pass over all of them would be: parts cut document by
    document padded ~8 % more tokens on the Flask site (docs/BENCHMARKS.md). `parts()` cuts what is not
    cut yet: the chunks' inputs, then (once `add_sentences` has cut them) their sentences; or both in one
    order, when it is called after. Texts of one size go in document order."""

    def __init__(
        self, group: list[Prepared], embedder: Embedder, known: dict[int, dict[str, np.ndarray]]
    ) -> None:
        """`known`: by document id, vectors of texts embedded before (reuse.known_vectors)."""
        self._group = group
        self._embedder = embedder
        self._known = known
        self._vectors: list[list[np.ndarray | None]] = [[] for _ in group]
        self._missing = [0] * len(group)
        # Per document, how many of its inputs were known or cut into parts already.
        self._queued = [0] * len(group)
        self.known = 0
        for d, (_, _, inputs, _) in enumerate(group):
            self._extend(d, inputs)

    def _extend(self, d: int, texts: list[str]) -> None:
        known = self._known.get(self._group[d][0].id, {})
        vectors = [known.get(text) for text in texts]
        self._vectors[d] += vectors
        missing = sum(v is None for v in vectors)
        self._missing[d] += missing
        self.known += len(vectors) - missing

    def add_sentences(self) -> None:
        """Each document's sentences after its chunks' inputs (when the deployment makes sentence vectors)."""
        for d, (document, chunks, inputs, _) in enumerate(self._group):
            texts = [c.text for c in chunks]
            extended, layout = sentence_inputs.with_sentences(texts, inputs, document.title)
            self._group[d] = (document, chunks, extended, layout)
            self._extend(d, extended[len(inputs) :])

    def whole(self) -> Iterator[tuple[Prepared, np.ndarray]]:
        """The documents whose every vector was known before any was embedded."""
        for d, missing in enumerate(self._missing):
            if not missing:
                yield self._group[d], np.stack(cast("list[np.ndarray]", self._vectors[d]))  # none missing

    @property
    def part_size(self) -> int:
        """Texts a part: one request of a provider, one batch of a built-in embedder."""
        size = max(1, settings.EMBED_BATCH_SIZE)
        return min(size, self._embedder.batch_size) if self._embedder.batch_size else size

    def _uncut(self) -> list[tuple[tuple[int, int], str]]:
        """The texts not cut into parts yet whose vectors are not known, by (document, row)."""
        return [
            ((d, c), inputs[c])
            for d, (_, _, inputs, _) in enumerate(self._group)
            for c in range(self._queued[d], len(inputs))
            if self._vectors[d][c] is None
        ]

    def uncut(self) -> int:
        """How many texts `parts()` would cut now."""
        return len(self._uncut())

    def parts(self) -> Iterator[list[tuple[tuple[int, int], str]]]:
        """The uncut texts, in parts."""
        texts = self._uncut()
        self._queued = [len(inputs) for _, _, inputs, _ in self._group]
        sizes = self._embedder.input_sizes([text for _, text in texts])
        # A stable sort: texts of one size stay in document order.
        order = sorted(range(len(texts)), key=sizes.__getitem__)
        # Small parts keep the job's tail short: what the last part makes whole is stored after it.
        size = self.part_size
        for start in range(0, len(order), size):
            yield [texts[n] for n in order[start : start + size]]

    def embedded(
        self, part: list[tuple[tuple[int, int], str]], vectors: np.ndarray
    ) -> Iterator[tuple[Prepared, np.ndarray]]:
        """Record a part's vectors; yields each document made whole by them, with all its vectors in order."""
        for ((d, c), _), vector in zip(part, vectors, strict=True):
            self._vectors[d][c] = vector
            self._missing[d] -= 1
            if self._missing[d] == 0:
                yield self._group[d], np.stack(cast("list[np.ndarray]", self._vectors[d]))  # none missing

    def unfinished(self) -> list[Prepared]:
        return [item for item, missing in zip(self._group, self._missing, strict=True) if missing]
