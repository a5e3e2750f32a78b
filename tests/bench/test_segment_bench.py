"""Segmenting the Flask docs' chunks into the sentence inputs an index job embeds, beside pysbd as it ships.

Every chunk of the 73 pages the crawl keeps, through `sentence_inputs.with_sentences` (ingestion.text.segment:
blocks, then pysbd's sentences), in turns: pysbd as it ships (the baseline: each call through `re`'s
512-pattern cache, one pattern compiled per sentence found), pysbd on ingestion.text.pysbd_patterns, that
with paragraphs of one sentence not sent to pysbd at all (segment.one_sentence), and that with the
abbreviation pass of ingestion.text.pysbd_abbreviations (as deployed). All four must give the same inputs.
`make bench` prints one JSON line; docs/BENCHMARKS.md ("Sentence segmentation") records it.
The assertion checks the outputs are equal, never how fast.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from contextlib import contextmanager, nullcontext

import pysbd
import pytest

from ingestion.text import pysbd_patterns, segment
from tests.bench.site_inputs import embedding_inputs, flask_chunks
from tests.factories import every_paragraph_through_pysbd, pysbd_on_plain_re, pysbds_own_abbreviation_pass

pytestmark = pytest.mark.bench

# `make bench` takes three rounds in turns; `make test` one, as a check that the two agree.
ROUNDS = 3 if os.environ.get("GROUNDED_BENCH_SEGMENT") == "full" else 1


def _inputs(documents: list[tuple[str, list[str]]]) -> list[str]:
    return [text for title, texts in documents for text in embedding_inputs(texts, title)]


@contextmanager
def _as_shipped():
    """pysbd's own segmenter on the real `re`, every paragraph through it: the baseline turns."""
    shipped = pysbd.Segmenter(language="en", clean=False)
    original, segment._segmenter = segment._segmenter, lambda: shipped
    try:
        with pysbd_on_plain_re(), every_paragraph_through_pysbd():
            yield
    finally:
        segment._segmenter = original


@contextmanager
def _patterns_kept():
    with pysbds_own_abbreviation_pass(), every_paragraph_through_pysbd():
        yield


_MODES = {
    "as_shipped": _as_shipped,
    "patterns_kept": _patterns_kept,
    "one_sentence_shortcut": pysbds_own_abbreviation_pass,  # one-sentence paragraphs skip pysbd
    "abbreviation_pass": nullcontext,  # as deployed: and pysbd_abbreviations' pass
}


def test_segmenting_the_flask_docs_beside_pysbd_as_shipped(settings):
    settings.SENTENCE_VECTORS = True
    documents = flask_chunks()
    chunks = sum(len(texts) for _, texts in documents)
    seconds: dict[str, list[float]] = {name: [] for name in _MODES}
    outputs = {}
    _inputs(documents[:3])  # pysbd's language data loaded outside the timing
    for _ in range(ROUNDS):
        for name, mode in _MODES.items():
            with mode():
                started = time.perf_counter()
                outputs[name] = _inputs(documents)
                seconds[name].append(time.perf_counter() - started)
    assert outputs["patterns_kept"] == outputs["as_shipped"]
    assert outputs["one_sentence_shortcut"] == outputs["as_shipped"]
    assert outputs["abbreviation_pass"] == outputs["as_shipped"]
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
                "speedup": {
                    name: round(best["as_shipped"] / best[name], 2) for name in best if name != "as_shipped"
                },
                "patterns_kept": pysbd_patterns.compiled.cache_info().currsize,
            }
        )
    )
