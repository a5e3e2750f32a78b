"""The built-in embedder on small index jobs: batches cut by padding beside fixed batches of 32.

An index job of one small document embeds a few chunk inputs of ~256 tokens and their sentences of 10-40
tokens. Sorted by length and cut every 32 rows, they made one batch padded to 256 tokens a row, and such a
job embedded at a tenth of the model's rate. The Flask docs' small pages (at most 400 inputs each) are
embedded document by document and in one pass over all of them, in turns: fixed batches of 32 (the
baseline) and `local.padded_batches`. `make bench` prints one JSON line; docs/BENCHMARKS.md ("Padding in
small jobs") records it. The assertion checks the vectors agree, never how fast.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager, nullcontext

import numpy as np
import pytest

from retrieval.embedders import local
from tests.bench.site_inputs import flask_inputs_by_page

pytestmark = pytest.mark.bench

FULL = os.environ.get("GROUNDED_BENCH_PADDING") == "full"
# `make bench`: 30 pages in 2 rounds; `make test`: 3 pages once, as a check that the two agree.
PAGES, ROUNDS = (30, 2) if FULL else (3, 1)
# A small page: what a one-page index job of a short page embeds (its chunks and their sentences).
SMALL_PAGE_INPUTS = 400


@contextmanager
def _fixed_batches():
    def fixed(order: list[int], lengths: list[int]) -> list[list[int]]:
        return [order[n : n + local.INFERENCE_BATCH] for n in range(0, len(order), local.INFERENCE_BATCH)]

    original, local.padded_batches = local.padded_batches, fixed
    try:
        yield
    finally:
        local.padded_batches = original


def test_small_jobs_with_batches_cut_by_padding_beside_fixed_batches(settings):
    settings.SENTENCE_VECTORS = True
    documents = [inputs for inputs in flask_inputs_by_page() if len(inputs) <= SMALL_PAGE_INPUTS][:PAGES]
    everything = [text for inputs in documents for text in inputs]
    embedder = local.MiniLMOnnxEmbedder()
    embedder.embed_documents(everything[:8])  # the session loaded outside the timing
    seconds: dict[str, dict[str, list[float]]] = {
        rule: {"per_document": [], "one_pass": []} for rule in ("fixed_32", "padding")
    }
    vectors = {}
    for _ in range(ROUNDS):
        for rule, runs in seconds.items():
            with _fixed_batches() if rule == "fixed_32" else nullcontext():
                started = time.perf_counter()
                vectors[rule] = np.concatenate([embedder.embed_documents(inputs) for inputs in documents])
                runs["per_document"].append(time.perf_counter() - started)
                started = time.perf_counter()
                embedder.embed_documents(everything)
                runs["one_pass"].append(time.perf_counter() - started)
    # The int8 model quantizes each batch's activations with one scale, so a batch's other rows move a
    # vector slightly; the same text must still give the same vector for search.
    agreement = (vectors["fixed_32"] * vectors["padding"]).sum(axis=1)
    assert agreement.min() > 0.99, agreement.min()
    rate = {
        rule: {way: round(len(everything) / min(runs[way]), 1) for way in runs}
        for rule, runs in seconds.items()
    }
    print(
        "\npadding-bench "
        + json.dumps(
            {
                "site": f"flask-docs ({len(documents)} pages of at most 400 inputs)",
                "inputs": len(everything),
                "seconds": {
                    rule: {way: [round(s, 2) for s in r] for way, r in runs.items()}
                    for rule, runs in seconds.items()
                },
                "inputs_per_s": rate,
                "per_document_speedup": round(
                    rate["padding"]["per_document"] / rate["fixed_32"]["per_document"], 2
                ),
                "per_document_of_one_pass": {
                    rule: round(r["per_document"] / r["one_pass"], 2) for rule, r in rate.items()
                },
                "min_cosine": round(float(agreement.min()), 5),
            }
        )
    )
