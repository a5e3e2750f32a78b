"""End-to-end crawl + index beside the raw embedder on the same chunks, in the same run.

A site is served on 127.0.0.1 with a sitemap; a sitemap source is created and real Celery worker processes
(the layout below) crawl, extract, chunk, embed and store it until the source is done. The same chunks'
embedding inputs (and their sentences, where the deployment makes sentence vectors) are embedded in this
process by a fresh instance of the same embedder (same threads and spinning as the index worker's), alone:
once before the crawl (on inputs made from the site's files with the same extraction and chunking, counted
only when they equal the crawl's) and twice after it; the fastest run counts: the physical limit.
`ratio_to_raw_embedder` = end-to-end chunks/s ÷ raw chunks/s
(the goal of issue #16: ≥ 0.9).

Where the time goes comes from the workers' own log lines ("crawl timings", "index timings": fetch, extract,
browser, chunk, embed, store) and Celery's task run times; Chromium launches are counted from them too, and
so are the fixed costs around the embedder (the wait before its first batch, the time after its last).
CPU seconds of each worker's process tree (Chromium included), of this process (the site's server) and of
the PostgreSQL server (shared with other sessions) say what the crawl takes from the embedder.

Sites: the shared Flask docs (77 pages) and a generated site of realistic pages
(tests/bench/generated_site.py, GROUNDED_BENCH_SITE_PAGES, default 120). On the generated site the same crawl
also runs with one document per index job (INDEX_BATCH_MAX_DOCUMENTS=1, the behaviour before issue #16) as the
pipeline's own baseline.

Layout on 2 cores (GROUNDED_BENCH_CRAWL_CONCURRENCY, default 2): one crawl worker with 2 processes (fetching
waits on the network; extraction is ~10 ms a page), one index worker with 1 process whose ONNX session uses
every core (intra-op threads = cores, spinning off). GROUNDED_BENCH_EMBEDDER_CORES=N gives the embedder the
first N cores and everything else the others (see EMBEDDER_CORES).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from django.conf import settings

from ingestion import lifecycle
from retrieval.embedders.local import MiniLMOnnxEmbedder
from sources.models import Chunk, Source
from tests.bench.generated_site import generate
from tests.bench.proc_cpu import cpu_seconds, postmaster, process_tree
from tests.bench.site_inputs import embedding_inputs, site_chunks
from tests.factories import ROOT
from tests.ingestion.conftest import flask_page_paths, flask_url
from tests.ingestion.crawl.servers import FLASK_DOCS, Reply, serving

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

# `make bench` sets GROUNDED_BENCH_PIPELINE=full (~6 min); the default (`make test`) crawls a 20-page
# generated site once, batched, so the benchmark's machinery stays tested in a minute.
FULL = os.environ.get("GROUNDED_BENCH_PIPELINE") == "full"
SITE_PAGES = int(os.environ.get("GROUNDED_BENCH_SITE_PAGES", "120" if FULL else "20"))
CRAWL_CONCURRENCY = int(os.environ.get("GROUNDED_BENCH_CRAWL_CONCURRENCY", "2"))
# The crawl worker's niceness: >0 lets the embedder have the cores first and the crawl fill the gaps.
CRAWL_NICE = int(os.environ.get("GROUNDED_BENCH_CRAWL_NICE", "0"))
# Index worker processes; above 1, each process's embedder gets cores / processes threads (EMBEDDER_THREADS,
# as README's scaling section says), and the raw embedder is also timed in that layout.
INDEX_CONCURRENCY = int(os.environ.get("GROUNDED_BENCH_INDEX_CONCURRENCY", "1"))
INDEX_THREADS = max(1, (os.cpu_count() or 1) // INDEX_CONCURRENCY) if INDEX_CONCURRENCY > 1 else 0
# GROUNDED_BENCH_EMBEDDER_CORES=N: the embedder (the index worker, and the raw embedder in this process) runs
# on the first N cores and everything else (the crawl worker with its Chromium, PostgreSQL, this process's
# site server) on the others, so the side work takes nothing from the embedder's cores: what the ratio is
# when the crawl and the database have cores of their own (docs/BENCHMARKS.md, "A core of its own"). Only
# with the full sites: a source of at most INGESTION_SMALL_SOURCE_PAGES pages (make test's 20) is indexed in
# the interactive lane, which the crawl worker takes too, so some of its embedding runs on the side cores.
EMBEDDER_CORES = int(os.environ.get("GROUNDED_BENCH_EMBEDDER_CORES", "0"))
ALL_CORES = sorted(os.sched_getaffinity(0))
if EMBEDDER_CORES and not 0 < EMBEDDER_CORES < len(ALL_CORES):
    raise RuntimeError(f"GROUNDED_BENCH_EMBEDDER_CORES must leave a core of {len(ALL_CORES)} for the rest")
EMBED_ON = set(ALL_CORES[:EMBEDDER_CORES]) if EMBEDDER_CORES else set(ALL_CORES)
SIDE_ON = set(ALL_CORES[EMBEDDER_CORES:]) if EMBEDDER_CORES else set(ALL_CORES)
_TIMING = re.compile(r"(crawl|index) timings (\{.*\})")
_TASK = re.compile(r"Task ingestion\.tasks\.(\w+)\[[^\]]+\] succeeded in ([0-9.]+)s")


def _pin_tree(root: int, cores: set[int]) -> None:
    """Set the CPU affinity of a process and its descendants alive now (PostgreSQL's backends; new ones
    inherit the postmaster's)."""
    for pid in process_tree(root):
        try:
            os.sched_setaffinity(pid, cores)
        except OSError:
            continue  # exited meanwhile


def _cores(cores: set[int]) -> str:
    return ",".join(map(str, sorted(cores)))


def _pin_threads(cores: set[int]) -> None:
    """Every thread of this process (the site's server runs in one of its own) on these cores."""
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cores)
        except OSError:
            continue  # ended meanwhile


@contextmanager
def _side_cores() -> Iterator[None]:
    """This process and the PostgreSQL server on the side cores for the crawl, every core again after."""
    if not EMBEDDER_CORES:
        yield
        return
    database = postmaster()

    def pin(cores: set[int]) -> None:
        _pin_threads(cores)
        if database:
            _pin_tree(database, cores)

    pin(SIDE_ON)
    try:
        yield
    finally:
        pin(set(ALL_CORES))


@contextmanager
def _workers(tag: str, extra_env: dict[str, str] | None = None) -> Iterator[tuple[list[Path], list[int]]]:
    """A crawl worker and an index worker, real processes on the test database and Redis: their logs and
    process ids (crawl worker first)."""
    import redis

    from config.celery import app

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in broker.scan_iter(match=f"{settings.REDIS_KEY_PREFIX}*", count=1000):
        broker.delete(key)
    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "GROUNDED_TEST_RUN": settings.TEST_RUN_ID,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "PYTHONUNBUFFERED": "1",
        # As docker-compose.yml's workers (make run's keep theirs in a pool): a worker process keeps its
        # database connection between tasks instead of opening one (a PostgreSQL backend) per task.
        "DATABASE_CONN_MAX_AGE": os.environ.get("GROUNDED_BENCH_CONN_MAX_AGE", "60"),
        **(extra_env or {}),
    }
    processes, logs = [], []
    index_env = {**env, "EMBEDDER_THREADS": str(INDEX_THREADS)} if INDEX_THREADS else env
    layout = (("interactive,crawl", CRAWL_CONCURRENCY), ("interactive,index", INDEX_CONCURRENCY))
    for queue, concurrency in layout:
        log_path = ROOT / ".local" / f"bench-{tag}-{queue}-{settings.TEST_RUN_ID}.log"
        log_path.parent.mkdir(exist_ok=True)
        logs.append(log_path)
        processes.append(
            subprocess.Popen(
                [
                    *(["nice", "-n", str(CRAWL_NICE)] if queue == "crawl" and CRAWL_NICE else []),
                    # taskset: the embedder's threads follow the index worker's cores (usable_cores).
                    *(
                        ["taskset", "-c", _cores(EMBED_ON if queue.endswith("index") else SIDE_ON)]
                        if EMBEDDER_CORES
                        else []
                    ),
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "-Q",
                    queue,
                    "--concurrency",
                    str(concurrency),
                    "-n",
                    f"bench-{queue}-{os.getpid()}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "--loglevel",
                    "INFO",
                ],
                cwd=ROOT,
                env=index_env if queue.endswith("index") else env,
                stdout=log_path.open("w"),
                stderr=subprocess.STDOUT,
            )
        )
    try:
        deadline = time.monotonic() + 90
        while len(app.control.ping(timeout=0.5)) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError(f"bench workers did not start; see {logs}")
        # A worker answers pings before its pool processes have loaded the embedder (tasks.warm_embedder):
        # the crawl starts once they have, as the raw embedder's timing starts with its model loaded, and
        # as a deployment's long-running workers are.
        while settings.INGESTION_LANES and sum(
            path.read_text(errors="replace").count("embedder warm") for path in logs
        ) < (CRAWL_CONCURRENCY + INDEX_CONCURRENCY):
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError(f"bench workers did not load the embedder; see {logs}")
            time.sleep(0.1)
        yield logs, [process.pid for process in processes]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _message(line: str) -> tuple[str, float | None]:
    """A log line's message and time: workers log JSON lines (config/logging.py), whose message is the
    `event`, with an ISO `timestamp`."""
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return line, None
        stamp = record.get("timestamp")
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None
        return str(record.get("event", line)), when
    return line, None


def _where_time_goes(logs: list[Path], started_at: float, finished_at: float) -> dict:
    """Stage seconds summed over the workers' log lines, and the fixed costs around the embedder: how long
    after the source's creation the first embedding began, and how long after the last one ended (its
    store, then the source's status) the source was done."""
    stages: dict[str, float] = {}
    counts = {"pages_timed": 0, "index_jobs": 0, "browser_launches": 0}
    tasks: dict[str, list[float]] = {}
    embeds: list[tuple[float, float]] = []  # (start, end) of each index job's embedding
    for log_path in logs:
        for raw_line in log_path.read_text(errors="replace").splitlines():
            line, when = _message(raw_line)
            if found := _TIMING.search(line):
                kind, values = found.group(1), json.loads(found.group(2))
                if kind == "crawl":
                    counts["pages_timed"] += 1
                    counts["browser_launches"] += "browser_s" in values
                    for key in ("http_s", "browser_s", "extract_s"):
                        stages[key] = stages.get(key, 0.0) + values.get(key, 0.0)
                else:
                    counts["index_jobs"] += 1
                    for key in ("chunk_s", "segment_s", "embed_s", "store_s"):
                        stages[key] = stages.get(key, 0.0) + values[key]
                    if when is not None:
                        end = when - values["store_s"]
                        embeds.append((end - values["embed_s"], end))
            elif found := _TASK.search(line):
                tasks.setdefault(found.group(1), []).append(float(found.group(2)))
    return {
        **counts,
        "seconds": {
            "fetch": round(stages.get("http_s", 0.0), 2),
            "extract": round(stages.get("extract_s", 0.0), 2),
            "browser": round(stages.get("browser_s", 0.0), 2),
            "chunk": round(stages.get("chunk_s", 0.0), 2),
            # cutting sentences while the embedder starts on the chunks: inside "embed"
            "segment": round(stages.get("segment_s", 0.0), 2),
            "embed": round(stages.get("embed_s", 0.0), 2),
            "store": round(stages.get("store_s", 0.0), 2),
        },
        "task_seconds": {name: round(sum(times), 2) for name, times in sorted(tasks.items())},
        "task_runs": {name: len(times) for name, times in sorted(tasks.items())},
        # Seconds during which some process was embedding: index jobs of a small source also run in the
        # crawl processes (the interactive lane), side by side, so their embed seconds can overlap.
        "embedding_wall_s": round(_union(embeds), 2),
        "first_embedding_after_s": round(min(e[0] for e in embeds) - started_at, 2) if embeds else None,
        "done_after_last_embedding_s": round(finished_at - max(e[1] for e in embeds), 2) if embeds else None,
    }


def _union(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _crawl(workspace, agent, sitemap_url: str, tag: str, extra_env: dict[str, str] | None = None) -> dict:
    with _side_cores(), _workers(tag, extra_env) as (logs, pids):
        database = postmaster()
        pids = [*pids, database] if database else pids
        cpu_before = [cpu_seconds(pid) for pid in pids]
        own_before = resource.getrusage(resource.RUSAGE_SELF)
        started_at, started = time.time(), time.perf_counter()
        source = lifecycle.source_create(
            workspace=workspace, agent_id=agent.id, kind="sitemap", title=tag, payload={"url": sitemap_url}
        )
        deadline = time.monotonic() + 1200
        while True:
            row = Source.unscoped.filter(id=source.id).values("status", "pages_done", "pages_failed").first()
            if row["status"] in ("done", "failed") or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        seconds, finished_at = time.perf_counter() - started, time.time()
        cpu = [cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
        own = resource.getrusage(resource.RUSAGE_SELF)
        time.sleep(1.0)  # the last log lines
        where = _where_time_goes(logs, started_at, finished_at)
    # CPU seconds over the wall time (2 cores give at most 2 x wall): what each part took from the machine.
    where["cpu_seconds"] = {
        "crawl_worker": round(cpu[0], 2),
        "index_worker": round(cpu[1], 2),
        "bench_process": round(own.ru_utime + own.ru_stime - own_before.ru_utime - own_before.ru_stime, 2),
        # The whole server: other sessions' tests on a shared machine count here too.
        "postgres_server": round(cpu[2], 2) if len(cpu) > 2 else None,
    }
    chunks = list(
        Chunk.unscoped.filter(source_id=source.id)
        .select_related("document")
        .order_by("document_id", "position")
    )
    by_document: dict[int, list[Chunk]] = {}
    for chunk in chunks:
        by_document.setdefault(chunk.document_id, []).append(chunk)
    inputs = []
    for document_chunks in by_document.values():
        title = document_chunks[0].document.title
        inputs += embedding_inputs([c.text for c in document_chunks], title)
    return {
        "status": row["status"],
        "pages_done": row["pages_done"],
        "pages_failed": row["pages_failed"],
        "chunks": len(chunks),
        "seconds": round(seconds, 2),
        "pages_per_s": round((row["pages_done"] + row["pages_failed"]) / seconds, 2),
        "chunks_per_s": round(len(chunks) / seconds, 2),
        "where_time_goes": where,
        "_inputs": inputs,
    }


def _raw_embedder(inputs: list[str], chunks: int) -> dict:
    """The same texts through a fresh instance of the same embedder, nothing else running: the limit.
    `chunks`: how many chunks these inputs are for (their sentences follow them when sentence vectors
    are on), so chunks/s compares with the crawl's."""
    # The index worker's thread setting (EMBEDDER_THREADS; 0 = the cores), so both sides run the same session.
    options = settings.EMBEDDERS["default"]["OPTIONS"]
    # On this thread, whose cores its threads are counted from (usable_cores) and inherit, as a worker's.
    os.sched_setaffinity(0, EMBED_ON)
    try:
        embedder = MiniLMOnnxEmbedder(
            threads=options["threads"], spinning=options["spinning"], streams=options["streams"]
        )
        embedder.embed_documents(inputs[:8])  # load the model outside the timing, as a worker has
        started, cpu = time.perf_counter(), time.process_time()
        embedder.embed_documents(inputs)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        os.sched_setaffinity(0, set(ALL_CORES))
    # CPU seconds beside the wall time: how much of the 2 cores the embedder alone keeps busy.
    return {
        "layout": f"1 process x {options['threads'] or 'cores'} threads, {options['streams']} streams",
        "seconds": round(seconds, 2),
        "chunks_per_s": round(chunks / seconds, 2),
        "inputs": len(inputs),
        "cpu_s": round(cpu, 2),
    }


def _raw_embedder_processes(inputs: list[str], chunks: int) -> dict:
    """The index worker's layout when it has several processes: as many processes, each embedding an equal
    share of the texts with INDEX_THREADS threads, started together; the slowest share's time counts."""
    import multiprocessing

    from tests.bench.embedder_threads import django_setup, embed_timed

    context = multiprocessing.get_context("spawn")
    with context.Pool(INDEX_CONCURRENCY, initializer=django_setup) as pool:
        start_at = time.time() + 15  # after every process has loaded the model
        shares = [
            pool.apply_async(embed_timed, (inputs[k::INDEX_CONCURRENCY], INDEX_THREADS, start_at))
            for k in range(INDEX_CONCURRENCY)
        ]
        runs = [share.get() for share in shares]
    seconds = max(run["seconds"] for run in runs)
    return {
        "layout": f"{INDEX_CONCURRENCY} processes x {INDEX_THREADS} threads",
        "seconds": seconds,
        "chunks_per_s": round(chunks / seconds, 2),
        "inputs": len(inputs),
        "cpu_s": round(sum(run["cpu_s"] for run in runs), 2),
    }


def _site_inputs(pages: dict[str, Path]) -> tuple[list[str], int]:
    """The embedding inputs a crawl of these pages (url -> file) should give, made in this process with the
    same extraction and chunking, so the raw embedder can also run before the crawl. Checked against the
    crawl's own chunks afterwards. Also how many chunks they are for."""
    documents = site_chunks(pages)
    inputs = [text for title, texts in documents for text in embedding_inputs(texts, title)]
    return inputs, sum(len(texts) for _, texts in documents)


def _report(site: str, runs: dict[str, dict], raw_before: dict | None = None) -> dict:
    """The raw embedder runs before the crawls (on the inputs made from the site's files, when they are the
    crawl's) and twice after them; the fastest run is the baseline: on a shared machine a load spike during
    one run would otherwise flatter the ratio."""
    inputs = runs["batched"].pop("_inputs")
    chunks = runs["batched"]["chunks"]
    raw_runs = [_raw_embedder(inputs, chunks), _raw_embedder(inputs, chunks)]
    if INDEX_CONCURRENCY > 1:
        # The baseline is the fastest way to embed these texts here, in either layout.
        raw_runs += [_raw_embedder_processes(inputs, chunks), _raw_embedder_processes(inputs, chunks)]
    if raw_before is not None:
        matched = sorted(raw_before.pop("_inputs")) == sorted(inputs)
        raw_before["inputs_match_the_crawl"] = matched
        if matched:
            raw_runs.insert(0, raw_before)
    raw = max(raw_runs, key=lambda run: run["chunks_per_s"])
    for run in runs.values():
        run.pop("_inputs", None)
        run["ratio_to_raw_embedder"] = round(run["chunks_per_s"] / raw["chunks_per_s"], 3)
        # The ratio is the product of two factors; the first is measured inside the run itself, so a load
        # spike between the crawl and the raw runs (other people's work on a shared machine) leaves it alone:
        # how much of the wall time some worker was embedding, and how fast it embedded meanwhile
        # compared with the raw runs.
        embed_s = run["where_time_goes"]["embedding_wall_s"]
        run["embedder_busy_fraction"] = round(embed_s / run["seconds"], 3)
        run["in_pipeline_embed_rate_to_raw"] = round(run["chunks"] / embed_s / raw["chunks_per_s"], 3)
    result = {
        "benchmark": "crawl_index_end_to_end",
        "site": site,
        "layout": f"crawl worker x{CRAWL_CONCURRENCY} (nice {CRAWL_NICE}), index worker x{INDEX_CONCURRENCY}"
        f" (threads {INDEX_THREADS or '= cores'})",
        "embedder": {
            k: v
            for k, v in settings.EMBEDDERS["default"]["OPTIONS"].items()
            if k in ("threads", "spinning", "streams")
        },
        "cores": os.cpu_count(),
        "embedder_cores": sorted(EMBED_ON),
        "side_cores": sorted(SIDE_ON),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "raw_embedder": raw,
        "raw_embedder_runs_chunks_per_s": [run["chunks_per_s"] for run in raw_runs],
        "raw_embedder_before_the_crawl": raw_before,
        **runs,
    }
    print(json.dumps(result))
    return result


def _sitemap(urls: list[str]) -> Reply:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    body = (
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )
    return Reply(200, body, content_type="application/xml")


@pytest.mark.skipif(not FULL, reason="GROUNDED_BENCH_PIPELINE=full (make bench) runs the Flask docs")
def test_flask_docs_crawl_and_index_beside_the_raw_embedder(workspace, agent):
    with serving(root=FLASK_DOCS) as server:
        server.routes["/sitemap.xml"] = _sitemap([flask_url(server, p) for p in flask_page_paths()])
        server.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", content_type="text/plain")
        inputs, chunks = _site_inputs({flask_url(server, p): FLASK_DOCS / p for p in flask_page_paths()})
        raw_before = {**_raw_embedder(inputs, chunks), "_inputs": inputs}
        batched = _crawl(workspace, agent, server.url("/sitemap.xml"), "flask")
    result = _report(f"flask-docs ({len(flask_page_paths())} pages)", {"batched": batched}, raw_before)
    assert result["batched"]["status"] == "done" and result["batched"]["chunks"] > 0


def test_generated_site_crawl_and_index_beside_the_raw_embedder_and_one_document_per_job(workspace, agent):
    with tempfile.TemporaryDirectory() as folder, serving(root=Path(folder)) as server:
        names = generate(Path(folder), count=SITE_PAGES)
        server.routes["/sitemap.xml"] = _sitemap([server.url(f"/{name}") for name in names])
        server.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", content_type="text/plain")
        inputs, chunks = _site_inputs({server.url(f"/{name}"): Path(folder) / name for name in names})
        raw_before = {**_raw_embedder(inputs, chunks), "_inputs": inputs}
        runs = {"batched": _crawl(workspace, agent, server.url("/sitemap.xml"), "generated")}
        if FULL:
            Source.unscoped.all().delete()
            runs["one_document_per_job"] = _crawl(
                workspace,
                agent,
                server.url("/sitemap.xml"),
                "generated-per-document",
                {"DJANGO_SETTINGS_MODULE": "tests.bench.settings_one_document_per_job"},
            )
    result = _report(f"generated ({SITE_PAGES} pages)", runs, raw_before)
    assert result["batched"]["status"] == "done" and result["batched"]["chunks"] > 0
