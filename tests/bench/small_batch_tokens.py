"""The built-in embedder's small-batch allowance (`local.SMALL_BATCH_TOKENS`): a batch under it is never cut
for its padding, since a call costs more than padding a few short rows. 512 (the first value) beside 128 (the
deployed one), in turns: the Flask docs' 30 small pages (at most 400 inputs each) document by document, as
one-page index jobs embed them, and the whole site's 9,108 inputs in one pass. docs/BENCHMARKS.md,
"Padding in small jobs".

    DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/python -m tests.bench.small_batch_tokens
"""

from __future__ import annotations

import json
import time

ROUNDS = 2


def main() -> None:
    import django

    django.setup()
    from django.conf import settings

    from retrieval.embedders import local
    from tests.bench.site_inputs import flask_inputs_by_page
    from tests.bench.test_padding_bench import SMALL_PAGE_INPUTS

    settings.SENTENCE_VECTORS = True
    documents = flask_inputs_by_page()
    small = [inputs for inputs in documents if len(inputs) <= SMALL_PAGE_INPUTS][:30]
    everything = [text for inputs in documents for text in inputs]
    embedder = local.MiniLMOnnxEmbedder()
    embedder.embed_documents(everything[:8])  # the session loaded outside the timing
    deployed = local.SMALL_BATCH_TOKENS
    try:
        for number in range(ROUNDS):
            for tokens in (512, 128):
                local.SMALL_BATCH_TOKENS = tokens
                started = time.perf_counter()
                for inputs in small:
                    embedder.embed_documents(inputs)
                per_document = time.perf_counter() - started
                started = time.perf_counter()
                embedder.embed_documents(everything)
                one_pass = time.perf_counter() - started
                row = {
                    "round": number,
                    "small_batch_tokens": tokens,
                    "small_pages_per_document_s": round(per_document, 2),
                    "small_inputs": sum(map(len, small)),
                    "site_one_pass_s": round(one_pass, 2),
                    "site_inputs": len(everything),
                }
                print(json.dumps(row), flush=True)
    finally:
        local.SMALL_BATCH_TOKENS = deployed


if __name__ == "__main__":
    main()
