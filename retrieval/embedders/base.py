"""The embedder interface. Vectors come back L2-normalised, one row per input text."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors. `message` is for people; `detail` for operators."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


class Embedder(ABC):
    #: Stored with every vector, so a change of model is detected instead of mixing vector spaces.
    model_name: str
    dimensions: int
    #: How many passages it runs at once, when it batches on its own (the built-in models); 0 for a
    #: provider, whose requests carry EMBED_BATCH_SIZE passages.
    batch_size: int = 0
    #: Whether embed_parts queues every batch when it is called and runs them while the caller does other
    #: work (ingestion.indexing then cuts sentences meanwhile); else each part is embedded when it is read.
    embeds_in_background: bool = False

    @abstractmethod
    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Vectors for passages, shape (len(texts), dimensions), float32, unit length."""

    def embed_parts(self, parts: list[list[str]]) -> Iterator[np.ndarray]:
        """embed_documents for each part in turn, yielding each part's vectors once they are made. An
        embedder that runs several batches at once overrides it to start on the next parts meanwhile."""
        for texts in parts:
            yield self.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def input_sizes(self, texts: list[str]) -> list[int]:
        """What each passage costs to embed, counted up to where the embedder stops reading: passages of one
        size batch together without padding (ingestion.indexing orders a job's chunks by it). Characters,
        unless the embedder knows its own units."""
        return [len(text) for text in texts]


def normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, so a worker pinned with taskset or a cgroup
    cpuset gets as many threads as it has cores, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
