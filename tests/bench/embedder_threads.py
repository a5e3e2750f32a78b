"""The built-in embedder's layouts on this machine, on the Flask docs' embedding inputs (their 623 chunks and
their sentences): one process at one and at two intra-op threads, two threads each running batches of
its own (streams), and two one-thread processes at once (each half the inputs), in turns.
Says whether more index processes of fewer threads would embed faster (docs/BENCHMARKS.md, "Parts cut by
token count across a job's documents").

    DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/python -m tests.bench.embedder_threads
"""

from __future__ import annotations

import json
import multiprocessing
import time

ROUNDS = 2


def _inputs() -> list[str]:
    from tests.bench.site_inputs import flask_inputs_by_page

    return [text for inputs in flask_inputs_by_page() for text in inputs]


def embed_timed(texts: list[str], threads: int, start_at: float = 0.0, streams: int = 0) -> dict:
    """`streams`: batches at once (0: the deployment's default, one per thread)."""
    from retrieval.embedders.local import MiniLMOnnxEmbedder

    embedder = MiniLMOnnxEmbedder(threads=threads, streams=streams)
    embedder.embed_documents(texts[:8])  # the model loaded outside the timing, as in a worker
    while time.time() < start_at:  # both processes of a pair start together
        time.sleep(0.005)
    started, cpu = time.perf_counter(), time.process_time()
    embedder.embed_documents(texts)
    return {"seconds": round(time.perf_counter() - started, 2), "cpu_s": round(time.process_time() - cpu, 2)}


def django_setup() -> None:
    import django

    django.setup()


def main() -> None:
    django_setup()
    texts = _inputs()
    context = multiprocessing.get_context("spawn")
    with context.Pool(2, initializer=django_setup) as pool:
        for number in range(ROUNDS):
            for threads, streams in ((2, 1), (2, 2), (1, 1)):
                alone = pool.apply(embed_timed, (texts, threads, 0.0, streams))
                layout = f"1 process x {threads} threads, {streams} batches at once"
                print(json.dumps({"round": number, "layout": layout, **alone}))
            start_at = time.time() + 15  # after both have loaded the model
            halves = [pool.apply_async(embed_timed, (texts[k::2], 1, start_at)) for k in (0, 1)]
            pair = [h.get() for h in halves]
            print(
                json.dumps(
                    {
                        "round": number,
                        "layout": "2 processes x 1 thread, half the inputs each",
                        "seconds": max(p["seconds"] for p in pair),
                        "cpu_s": round(sum(p["cpu_s"] for p in pair), 2),
                    }
                )
            )
    print(json.dumps({"inputs": len(texts)}))


if __name__ == "__main__":
    main()
