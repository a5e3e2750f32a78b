"""Segmenting the Flask docs' chunks into the sentence inputs an index job embeds, beside pysbd as it ships.

Every chunk of the 73 pages the crawl keeps, through `sentence_inputs.with_sentences` (ingestion.segment:
blocks, then pysbd's sentences), in turns: pysbd as it ships (the baseline: each call through `re`'s
512-pattern cache, one pattern compiled per sentence found) and pysbd on ingestion.pysbd_patterns. The two
must give the same inputs. `make bench` prints one JSON line; docs/BENCHMARKS.md ("Sentence segmentation")
records it. The assertion checks the outputs are equal, never how fast.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from contextlib import contextmanager, nullcontext

import pysbd
import pytest

from ingestion import pysbd_patterns, segment, sentence_inputs
from ingestion.chunk_settings import default_chunking
from ingestion.crawl.extract import DroppedPage, extract_page
from retrieval.vectors import embedding_input
from tests.ingestion.conftest import flask_page_paths
from tests.ingestion.crawl.servers import FLASK_DOCS

pytestmark = pytest.mark.bench

# `make bench` takes three rounds in turns; `make test` one, as a check that the two agree.
ROUNDS = 3 if os.environ.get("GROUNDED_BENCH_SEGMENT") == "full" else 1


def _flask_chunks() -> list[tuple[str, list[str]]]:
    documents = []
    for path in flask_page_paths():
        try:
            page = extract_page((FLASK_DOCS / path).read_bytes(), f"http://127.0.0.1/{path}")
        except DroppedPage:
            continue
        title = (page.title or path)[:500]
        documents.append((title, [c.text for c in default_chunking({}).chunks(page.text)]))
    return documents


def _inputs(documents: list[tuple[str, list[str]]]) -> list[str]:
    inputs = []
    for title, texts in documents:
        inputs += sentence_inputs.with_sentences(texts, [embedding_input(t, title) for t in texts], title)[0]
    return inputs


@contextmanager
def _as_shipped():
    """pysbd's own segmenter on the real `re`, for the baseline turns."""
    users = [m for m in list(sys.modules.values()) if getattr(m, "re", None) is pysbd_patterns.RE]
    for module in users:
        module.re = re
    segment._segmenter.cache_clear()
    shipped = pysbd.Segmenter(language="en", clean=False)
    original, segment._segmenter = segment._segmenter, lambda: shipped
    try:
        yield
    finally:
        segment._segmenter = original
        segment._segmenter.cache_clear()
        pysbd_patterns.install()


def test_segmenting_the_flask_docs_beside_pysbd_as_shipped(settings):
    settings.SENTENCE_VECTORS = True
    documents = _flask_chunks()
    chunks = sum(len(texts) for _, texts in documents)
    seconds: dict[str, list[float]] = {"as_shipped": [], "patterns_kept": []}
    outputs = {}
    _inputs(documents[:3])  # pysbd's language data loaded outside the timing
    for _ in range(ROUNDS):
        for name in seconds:
            with _as_shipped() if name == "as_shipped" else nullcontext():
                started = time.perf_counter()
                outputs[name] = _inputs(documents)
                seconds[name].append(time.perf_counter() - started)
    assert outputs["patterns_kept"] == outputs["as_shipped"]
    best = {name: min(runs) for name, runs in seconds.items()}
    print(
        "\nsegment-bench "
        + json.dumps(
            {
                "site": f"flask-docs ({len(documents)} pages kept)",
                "chunks": chunks,
                "inputs": len(outputs["as_shipped"]),
                "seconds": {name: [round(s, 3) for s in runs] for name, runs in seconds.items()},
                "chunks_per_s": {name: round(chunks / best[name], 1) for name in best},
                "median_ms_a_chunk": {
                    name: round(1000 * statistics.median(runs) / chunks, 2) for name, runs in seconds.items()
                },
                "speedup": round(best["as_shipped"] / best["patterns_kept"], 2),
                "patterns_kept": pysbd_patterns.compiled.cache_info().currsize,
            }
        )
    )
