"""The built-in embedder beside a little other work, as in an index worker next to the crawl and PostgreSQL.

On 2 cores the index worker's ONNX session runs two intra-op threads, and each operator waits for its
slowest share: when other work takes one core for a moment, the other thread idles until that share is
done. So a small load beside the embedder may cost it more than the CPU that load uses. This runs the
Flask docs' embedding inputs (chunks and sentences, as ingestion embeds them) through the embedder alone
and beside a process that keeps one core busy a given share of the time (short bursts, as a crawl task or
a PostgreSQL write is), in turns (docs/BENCHMARKS.md, "The embedder beside other work").

    DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/python -m tests.bench.embedder_contention \
        [INPUTS [LAYOUTS]]

LAYOUTS: embedder layouts to try in turns, comma-separated, each THREADS or THREADS/STREAMS (default 0:
one thread per core, one batch at a time). More threads than cores splits each operator into more shares,
so a core taken for a moment holds up a smaller one; STREAMS batches at once, each on THREADS / STREAMS
threads, share no operator, so a core taken holds up only the batch on it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time

ROUNDS = 2
DUTIES = (0.0, 0.1, 0.25)  # the share of one core the other process keeps busy
BURST_S = 0.004  # one burst of the other work


def _busy(duty: float, stop: multiprocessing.synchronize.Event) -> None:
    """Keep one core busy `duty` of the time, in bursts of BURST_S."""
    idle = BURST_S * (1 - duty) / duty
    while not stop.is_set():
        until = time.perf_counter() + BURST_S
        while time.perf_counter() < until:
            pass
        time.sleep(idle)


def _inputs(limit: int) -> list[str]:
    from tests.bench.site_inputs import flask_inputs_by_page

    return [text for inputs in flask_inputs_by_page() for text in inputs][:limit]


def main() -> None:
    import django

    django.setup()
    from retrieval.embedders.local import MiniLMOnnxEmbedder

    texts = _inputs(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
    layouts = (sys.argv[2] if len(sys.argv) > 2 else "0").split(",")
    embedders = {}
    for layout in layouts:
        threads, _, streams = layout.partition("/")
        embedders[layout] = MiniLMOnnxEmbedder(threads=int(threads), streams=int(streams or 1))
    for embedder in embedders.values():
        embedder.embed_documents(texts[:8])  # the model loaded outside the timing, as in a worker
    context = multiprocessing.get_context("spawn")
    for number in range(ROUNDS):
        for (layout, embedder), duty in ((pair, duty) for duty in DUTIES for pair in embedders.items()):
            stop = context.Event()
            other = context.Process(target=_busy, args=(duty, stop)) if duty else None
            if other is not None:
                other.start()
                time.sleep(0.5)
            started, cpu = time.perf_counter(), time.process_time()
            embedder.embed_documents(texts)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            if other is not None:
                stop.set()
                other.join()
            row = {"round": number, "layout": layout, "other_core_share": duty}
            row["seconds"] = round(seconds, 2)
            row |= {
                "cpu_s": round(cpu, 2),
                "inputs": len(texts),
                "load_average": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
