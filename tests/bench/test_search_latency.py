"""The search API's latency over real HTTP, beside the raw parts of a search measured in the same run.

A workspace holds SciFact's abstracts (`../shared/data/scifact`), chunked as ingestion chunks them, with
real BM25 postings; their vectors come from the synthetic corpus (clustered, unit length), since embedding
5,183 abstracts would take minutes and a vector's content does not change what a search costs. gunicorn
processes on 127.0.0.1 (one worker; GROUNDED_BENCH_SEARCH_SERVER picks one or more set-ups, served side by
side: `asgi`, as `make run` starts it, by default) serve the test database, and this process asks
`GET /api/v1/search?top_k=5` with an API key, one request at a time on a kept-alive connection to each. The
claims are asked in blocks of ten, each block of the raw parts and of each server in turn, so a burst of
someone else's load on this shared machine falls on all of them alike (served one after another, two runs
of the same code differed by more than the changes measured). Each server has a Redis key prefix of its
own: its own search cache.

- per mode (hybrid, keyword, vector), SciFact claims asked for the first time (nothing cached);
- the same claims asked again (a repeated question);
- `GET /healthz` (no database, no search): the floor of the HTTP and Django stack;
- beside them, in this process: the raw parts (the query's embedding plus an exact dense search of the
  same vectors in numpy, top 5), asked in turn with the servers in each mode's phase (`raw_parts_<mode>`,
  the x raw ratios of that mode) and alone before any server runs (`raw_parts_alone`, the "alone" ratio),
  the embedding alone, and `search_passages` without HTTP.

One JSON line per server and a table are printed. The test asserts what the answers are (results, a
repeated question answered the same, every server giving exactly the first one's results), never how fast
they came. `make bench` runs it on every abstract
(GROUNDED_BENCH_SEARCH_DOCS=all, 5,748 chunks) with 200 claims; the default run is small.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
import pytest

from tests.bench.corpus import BLOCK, SyntheticCorpus
from tests.factories import SHARED_DATA

# Committed rows (transaction=True), so the server process sees them; the database is emptied after.
pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = Path(os.environ.get("GROUNDED_SCIFACT_DIR", SHARED_DATA / "scifact"))
_DOCS = os.environ.get("GROUNDED_BENCH_SEARCH_DOCS", "300")
DOCS = None if _DOCS == "all" else int(_DOCS)
QUERIES = int(os.environ.get("GROUNDED_BENCH_SEARCH_QUERIES", "30"))
MODES = ("hybrid", "keyword", "vector")
# GROUNDED_BENCH_SEARCH_SERVER: one or more (comma-separated, served one after another on the same data):
# `asgi` is what `make run` and the image serve (config/asgi.py: uvicorn workers, the chat on Django's ASGI
# handler, every other view on a fixed thread pool with persistent connections); `asgi-django` Django's ASGI
# handler for everything with the connection pool (the server before issue #17); `wsgi` the threaded server
# (gthread, 4 threads); `baseline` serves the checkout at GROUNDED_BENCH_SEARCH_BASELINE (another commit's
# code, e.g. `git archive <commit> | tar -x -C /tmp/base`) as it serves itself, on the same database.
# Database connections follow each server's settings and the environment (DATABASE_CONN_MAX_AGE,
# DATABASE_POOL_MAX_SIZE). GROUNDED_BENCH_SEARCH_BASELINE_WORKER serves the baseline with another uvicorn
# worker class: `uvicorn_worker.UvicornH11Worker` (pure-Python HTTP, asyncio's loop) is how commits before
# httptools and uvloop were installed served, whatever this environment has.
UVICORN = ["--worker-class", "uvicorn_worker.UvicornWorker"]
BASELINE_WORKER = os.environ.get("GROUNDED_BENCH_SEARCH_BASELINE_WORKER", "uvicorn_worker.UvicornWorker")
SERVERS: dict[str, tuple[list[str], dict[str, str]]] = {
    "asgi": (["config.asgi:application", *UVICORN], {}),
    # The same, with no workspace's vectors held in memory (retrieval/resident.py): PostgreSQL's HNSW.
    "asgi-store": (["config.asgi:application", *UVICORN], {"SEARCH_RESIDENT_MAX_CHUNKS": "0"}),
    # The same, reading the API key's row on every request (before sources/key_rows.py).
    "asgi-keys-read": (["config.asgi:application", *UVICORN], {"API_KEY_CACHE": "0"}),
    "asgi-h11": (["config.asgi:application", "--worker-class", "uvicorn_worker.UvicornH11Worker"], {}),
    "asgi-django": (["config.asgi:django_asgi", *UVICORN], {"DATABASE_CONN_MAX_AGE": "0"}),
    "wsgi": (["config.wsgi", "--worker-class", "gthread", "--threads", "4"], {}),
    "baseline": (["config.asgi:application", "--worker-class", BASELINE_WORKER], {}),
}
SERVER_NAMES = os.environ.get("GROUNDED_BENCH_SEARCH_SERVER", "asgi").split(",")
BASELINE = os.environ.get("GROUNDED_BENCH_SEARCH_BASELINE", "")
# 0: the baseline's hybrid ranking differs by design (a commit before sentence rescoring, issue #17), so its
# hybrid answers are not held to the first server's.
RANK_ALIKE = os.environ.get("GROUNDED_BENCH_SEARCH_BASELINE_RANKS_ALIKE", "1") == "1"
TOP_K = 5
WARMUP = 5
METRICS_TOKEN = "bench-metrics"
#: how long the warm-up waits for the server's copy of the workspace (retrieval/resident.py) to be built
COPY_WAIT_S = 30
UPSERT_BATCH = 500
#: claims asked of one server (or the raw parts) before the next takes its turn
TURN = 10


def percentiles(seconds: list[float]) -> dict[str, float]:
    p50, p95 = np.percentile(np.array(seconds) * 1000, [50, 95])
    return {"p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2), "n": len(seconds)}


def timed(function: Callable[[str], Any], inputs: list[str]) -> tuple[list[Any], dict[str, float]]:
    """Each input once, timed; a first call on a claim that is not among them warms the path up."""
    function("unmeasured warm-up: " + inputs[0][::-1])
    results, seconds = [], []
    for item in inputs:
        started = time.perf_counter()
        results.append(function(item))
        seconds.append(time.perf_counter() - started)
    return results, percentiles(seconds)


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    rows = []
    with path.open() as lines:
        for line in lines:
            rows.append(json.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def _synthetic_sentences(chunks: list, vectors: np.ndarray, titles: list[str]) -> None:
    """As many sentence vectors per chunk as ingestion would make for its text
    (ingestion.text.sentence_inputs), each its chunk's synthetic vector plus noise, so the rescoring reads and
    scores what it would."""
    from ingestion.text.sentence_inputs import sentence_texts
    from retrieval.sentences import pack

    rng = np.random.default_rng(11)
    for chunk, vector, title in zip(chunks, vectors, titles, strict=True):
        count = max(1, len(sentence_texts(chunk.text, title)))
        noisy = vector + rng.normal(scale=0.6 / np.sqrt(len(vector)), size=(count, len(vector)))
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        chunk.sentence_vectors = pack(noisy.astype(np.float32))


class SciFactWorkspace:
    """One workspace, agent and source holding SciFact abstracts, one document each."""

    def __init__(self, docs: int | None) -> None:
        from django.conf import settings

        from agents.models import Agent
        from config.backends import embedders, vector_stores
        from ingestion.text.chunking import chunk_id, chunk_text
        from retrieval.keyword import term_counts
        from retrieval.stores.base import VectorRecord
        from retrieval.vectors import embedding_input
        from sources.models import Chunk, Document, Source, Workspace
        from sources.services import api_key_create
        from sources.tenancy import workspace_scope

        abstracts = read_jsonl(SCIFACT / "corpus.jsonl", docs)
        self.workspace = Workspace.objects.create(name="Bench search", slug=f"bench-search-{os.getpid()}")
        _key, self.api_key = api_key_create(workspace=self.workspace, name="bench")
        with workspace_scope(self.workspace.id):
            self.agent = Agent.objects.create(name="SciFact")
            source = Source.objects.create(agent=self.agent, kind="text", title="SciFact", status="done")
            documents = Document.objects.bulk_create(
                [
                    Document(
                        workspace_id=self.workspace.id,
                        source=source,
                        title=a["title"],
                        text=a["text"],
                        language="en",
                        status="done",
                    )
                    for a in abstracts
                ],
                batch_size=2000,
            )
            chunks, inputs = [], []
            for document in documents:
                pieces = chunk_text(
                    document.text,
                    target_chars=settings.CHUNK_TARGET_CHARS,
                    overlap_chars=settings.CHUNK_OVERLAP_CHARS,
                )
                for piece in pieces:
                    cid = chunk_id(document.id, piece.position, piece.text)
                    chunks.append(
                        Chunk(
                            id=cid,
                            workspace_id=self.workspace.id,
                            document=document,
                            source=source,
                            position=piece.position,
                            text=piece.text,
                            metadata={"agent_id": self.agent.id, "document_id": document.id, "lang": "en"},
                        )
                    )
                    inputs.append(embedding_input(piece.text, document.title))
        synthetic = SyntheticCorpus(len(chunks))
        self.vectors = np.concatenate([synthetic.block(b).vectors for b in range(synthetic.blocks)])
        if settings.SENTENCE_VECTORS:
            _synthetic_sentences(chunks, self.vectors, [c.document.title for c in chunks])
        with workspace_scope(self.workspace.id):
            Chunk.objects.bulk_create(chunks, batch_size=2000)
        self.chunk_ids = [str(chunk.id) for chunk in chunks]
        assert len(self.vectors) == len(chunks) and BLOCK > 0
        store = vector_stores["default"]
        model = embedders["default"].model_name
        for start in range(0, len(chunks), UPSERT_BATCH):
            store.upsert(
                workspace_id=self.workspace.id,
                records=[
                    VectorRecord(
                        chunk_id=str(chunks[i].id),
                        vector=self.vectors[i],
                        metadata=chunks[i].metadata,
                        terms=term_counts(inputs[i]),
                    )
                    for i in range(start, min(start + UPSERT_BATCH, len(chunks)))
                ],
                model_name=model,
            )
        from django.db import connection

        with connection.cursor() as cursor:
            # A workspace that stopped changing, as autovacuum leaves it: statistics for the planner and
            # the visibility map that lets index-only scans skip the heap (each posting read otherwise
            # fetched its heap row, tripling the keyword search's time).
            for table in ("sources_chunk", "retrieval_keywordposting", "retrieval_keywordstats"):
                cursor.execute(f"VACUUM ANALYZE {table}")
        self.chunks = len(chunks)
        self.documents = len(documents)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def connections_of(server: str, env: dict[str, str]) -> str:
    """How the server holds database connections, as its settings will decide."""
    # config/asgi.py turns persistent connections on (a baseline's, if it is recent enough to).
    persistent = server in ("asgi", "asgi-store", "asgi-keys-read", "asgi-h11") or (
        server == "baseline" and "DATABASE_CONN_MAX_AGE" in (Path(BASELINE) / "config/asgi.py").read_text()
    )
    default_age = "60" if persistent else "0"
    if int(env.get("DATABASE_CONN_MAX_AGE", default_age)):
        return "persistent"
    pool = env.get("DATABASE_POOL_MAX_SIZE", "20")
    return f"pool of {pool} per process" if int(pool) else "one per request"


@contextmanager
def gunicorn(port: int, server: str, run_id: str) -> Iterator[dict[str, str]]:
    """The web server as `make run` starts it (one worker instead of two), on the test database."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    app, overrides = SERVERS[server]
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        GROUNDED_TEST_RUN=run_id,  # its own Redis key prefix: its own search cache and rate counts
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        # The bench asks thousands of questions a minute with one key: the API's per-key rate limit is not
        # what it measures (the throttle's own cost, one Redis INCR, is still paid on every request).
        API_RATE_PER_MINUTE="1000000",
        METRICS_TOKEN=METRICS_TOKEN,
        API_KEY_CACHE="1",  # as deployed (the test settings turn it off for the suite's transactions)
    )
    env.update(overrides)
    cwd = ROOT
    if server == "baseline":
        if not BASELINE or not (Path(BASELINE) / "config" / "asgi.py").exists():
            pytest.fail("GROUNDED_BENCH_SEARCH_BASELINE must name a checkout to serve as the baseline")
        cwd = Path(BASELINE).resolve()
        env["PYTHONPATH"] = str(cwd)  # its own code, not this checkout's
    log_path = ROOT / ".local" / f"bench-search-gunicorn-{run_id}-{server}.log"
    log_path.parent.mkdir(exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                *app,
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--log-level",
                "warning",
            ],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield env
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture
def scifact() -> SciFactWorkspace:
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip(f"SciFact is not at {SCIFACT}")
    return SciFactWorkspace(DOCS)


class Client:
    """Plain http.client on one kept-alive connection: the least a client can add to each request."""

    def __init__(self, port: int, api_key: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {api_key}"}

    def get(
        self, path: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, str | None]:
        url = f"{path}?{urlencode(params)}" if params else path
        try:
            return self._get(url, headers or self.headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # gunicorn closes a connection idle for 2 s (while this process measured something else);
            # each phase starts with an unmeasured request, so no figure includes the reconnection.
            self.connection.close()
            return self._get(url, headers or self.headers)

    def copies_built(self) -> float:
        """The server's count of copies built and held (config/metrics.py); 0 before there was one."""
        _status, raw, _cache = self.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        body = raw.decode()
        held = 'grounded_search_resident_builds_total{outcome="held"}'
        return sum(float(line.split()[-1]) for line in body.splitlines() if line.startswith(held))

    def _get(self, url: str, headers: dict[str, str]) -> tuple[int, bytes, str | None]:
        self.connection.request("GET", url, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read(), response.getheader("X-Search-Cache")


@contextmanager
def serving(server: str, api_key: str, run_id: str) -> Iterator[tuple[Client, dict[str, str]]]:
    port = free_port()
    with gunicorn(port, server, run_id) as env:
        deadline = time.monotonic() + 60
        while True:
            try:
                client = Client(port, api_key)
                if client.get("/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("gunicorn did not answer /healthz within 60 s (see .local/bench-search-*.log)")
            time.sleep(0.2)
        try:
            yield client, env
        finally:
            client.connection.close()


def test_search_api_latency_beside_its_raw_parts(scifact):
    from django.conf import settings

    from config.backends import embedders
    from retrieval.services import SearchParams, search_passages

    claims = list(dict.fromkeys(q["text"] for q in read_jsonl(SCIFACT / "queries.jsonl")))
    warmup, claims = claims[:WARMUP], claims[WARMUP : WARMUP + QUERIES]
    embedder = embedders["default"]

    def raw(claim: str) -> list[int]:
        # einsum, not `@`: BLAS's threads fought the embedder's on two busy cores (a 5,748 x 384 product
        # took longer than the embedding); einsum's own loop is single-threaded, ~1 ms.
        scores = np.einsum("ij,j->i", scifact.vectors, embedder.embed_query(claim))
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        return top[np.argsort(-scores[top])].tolist()

    def in_process(mode: str) -> Callable[[str], list]:
        params = SearchParams(top_k=TOP_K, mode=mode)
        return lambda claim: search_passages(workspace_id=scifact.workspace.id, query=claim, params=params)

    for claim in warmup:  # loads the embedder and fills connections
        raw(claim)
        for mode in MODES:
            in_process(mode)(claim)
    shared: dict[str, Any] = {"hybrid_candidates": candidates_beside_exact(scifact, embedder, claims[:50])}
    _, shared["raw_parts_alone"] = timed(raw, claims)
    _, shared["embedding_alone"] = timed(embedder.embed_query, claims)
    for mode in MODES:
        _, shared[f"in_process_{mode}"] = timed(in_process(mode), claims)

    # The exact 5 nearest of each claim: what a vector search of the vectors held in memory must return.
    exact = {claim: [scifact.chunk_ids[i] for i in raw(claim)] for claim in claims}
    with ExitStack() as stack:
        served = []
        for index, server_name in enumerate(SERVER_NAMES):
            run_id = f"{settings.TEST_RUN_ID}s{index}"
            served.append((server_name, *stack.enter_context(serving(server_name, scifact.api_key, run_id))))
        raw_by_mode, measured = measure_servers([(c, e) for _, c, e in served], raw, warmup, claims, exact)
    shared.update(raw_by_mode)
    runs = []
    for (server_name, _client, env), figures in zip(served, measured, strict=True):
        for mode in MODES:
            api, raw_mode = figures[f"api_{mode}"], raw_by_mode[f"raw_parts_{mode}"]
            api["x_raw_p50"] = round(api["p50_ms"] / raw_mode["p50_ms"], 2)
            api["x_raw_p95"] = round(api["p95_ms"] / raw_mode["p95_ms"], 2)
            # Beside the raw parts measured alone, before any server ran: what they cost on a warm core.
            api["x_raw_alone_p50"] = round(api["p50_ms"] / shared["raw_parts_alone"]["p50_ms"], 2)
        runs.append((server_name, connections_of(server_name, env), figures))

    for server_name, db_connections, figures in runs:
        print(
            "\nsearch-latency "
            + json.dumps(
                {
                    "at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "documents": scifact.documents,
                    "chunks": scifact.chunks,
                    "top_k": TOP_K,
                    "load_average_1m": round(os.getloadavg()[0], 2),
                    "server": server_name,
                    "db_connections": db_connections,
                    **shared,
                    **figures,
                }
            )
        )
    print(f"\n{'':28} {'p50 ms':>8} {'p95 ms':>8}  ({scifact.chunks} chunks, {len(claims)} claims)")
    print_rows(shared)
    for server_name, db_connections, figures in runs:
        print(f"-- {server_name} ({db_connections})")
        print_rows(figures)


def candidates_beside_exact(scifact: SciFactWorkspace, embedder: Any, claims: list[str]) -> dict:
    """A hybrid search's 50 vector candidates, from the vectors held in memory and from PostgreSQL's HNSW
    index, each beside the exact 50 nearest (numpy over the bench's own vectors): the copy must be exact;
    HNSW's recall says how often the two servers' results may differ."""
    from config.backends import vector_stores
    from retrieval import resident

    started = time.perf_counter()
    copy = resident.load(workspace_id=scifact.workspace.id, model_name=embedder.model_name, generation="-")
    build_s = time.perf_counter() - started
    assert copy is not None and sorted(copy.ids) == sorted(scifact.chunk_ids) and copy.postings is not None
    store, k, found = vector_stores["default"], 50, {"resident": 0, "hnsw": 0}
    for claim in claims:
        query = embedder.embed_query(claim)
        scores = np.einsum("ij,j->i", scifact.vectors, query)
        exact = {scifact.chunk_ids[i] for i in np.argpartition(-scores, k)[:k]}
        held = {h.chunk_id for h in copy.top(query, k, None)}
        hnsw = store.search(
            workspace_id=scifact.workspace.id, vector=query, top_k=k, model_name=embedder.model_name
        )
        found["resident"] += len(held & exact)
        found["hnsw"] += len({h.chunk_id for h in hnsw} & exact)
    total = k * len(claims)
    assert found["resident"] == total, f"the copy found {found['resident']} of the exact {total}"
    recall = {f"{n}_recall": round(v / total, 4) for n, v in found.items()}
    held = {"copy_build_s": round(build_s, 3), "copy_mb": round(copy.nbytes / 2**20, 1)}
    return {"k": k, "claims": len(claims), **recall, **held}


def wait_for_the_copy(client: Client, env: dict[str, str]) -> float | None:
    """Seconds the warm-up waited for the server to hold its copy of the workspace: the first search
    asked for it and it is built in the background (searches meanwhile take the SQL path), so measuring
    at once would time a few seconds of HNSW searches and the build beside them. None: this server
    holds no copy (SEARCH_RESIDENT_MAX_CHUNKS=0) or does not report one (a baseline before the metric),
    and was given the same wait."""
    started = time.monotonic()
    if env.get("SEARCH_RESIDENT_MAX_CHUNKS") == "0":
        return None
    while time.monotonic() < started + COPY_WAIT_S:
        if client.copies_built() >= 1:
            return round(time.monotonic() - started, 2)
        time.sleep(0.2)
    return None


def timed_in_turn(functions: list[Callable[[str], Any]], inputs: list[str]) -> list[tuple[list, dict]]:
    """The inputs in blocks of TURN, each block given to every function in turn, each call timed: the
    functions share the machine's load of each fraction of a second. (Taking turns at every input made
    every call pay for caches the other process had just evicted: a cached answer took twice as long.)
    Each function is warmed up first on a claim that is not among the inputs."""
    for function in functions:
        function("unmeasured warm-up: " + inputs[0][::-1])
    results: list[list] = [[] for _ in functions]
    seconds: list[list[float]] = [[] for _ in functions]
    for start in range(0, len(inputs), TURN):
        for index, function in enumerate(functions):
            for item in inputs[start : start + TURN]:
                started = time.perf_counter()
                results[index].append(function(item))
                seconds[index].append(time.perf_counter() - started)
    return [(found, percentiles(taken)) for found, taken in zip(results, seconds, strict=True)]


def measure_servers(
    servers: list[tuple[Client, dict[str, str]]],
    raw: Callable[[str], Any],
    warmup: list[str],
    claims: list[str],
    exact: dict[str, list],
) -> tuple[dict[str, Any], list[dict]]:
    """Every server's figures, each claim asked of the raw parts and of every server in turn; and the raw
    parts' figures for each mode's phase."""

    def ask(client: Client, mode: str) -> Callable[[str], dict]:
        def get(claim: str) -> dict:
            status, body, cache = client.get("/api/v1/search", {"q": claim, "top_k": TOP_K, "mode": mode})
            assert status == 200, body[:300]
            return {**json.loads(body), "cache": cache}

        return get

    for client, _env in servers:
        for claim in warmup:  # loads the embedder and fills connections in the server
            for mode in MODES:
                ask(client, mode)(claim)
    figures: list[dict[str, Any]] = [{"copy_ready_s": wait_for_the_copy(c, e)} for c, e in servers]
    floors = timed_in_turn([lambda _claim, c=c: c.get("/healthz") for c, _e in servers], claims)
    for server_figures, (_, floor) in zip(figures, floors, strict=True):
        server_figures["http_floor_healthz"] = floor
    raw_by_mode: dict[str, Any] = {}
    answers: dict[str, list] = {}  # mode -> the first server's results, which every other must repeat
    for mode in MODES:
        first = timed_in_turn([raw, *(ask(c, mode) for c, _e in servers)], claims)
        raw_by_mode[f"raw_parts_{mode}"] = first[0][1]
        again = timed_in_turn([ask(c, mode) for c, _e in servers], claims)
        for server_figures, (asked, taken), (repeated, taken_again) in zip(
            figures, first[1:], again, strict=True
        ):
            server_figures[f"api_{mode}"], server_figures[f"api_{mode}_repeated"] = taken, taken_again
            check_answers(server_figures, mode, asked, repeated, answers, claims, exact)
    return raw_by_mode, figures


def check_answers(
    figures: dict[str, Any],
    mode: str,
    first: list[dict],
    again: list[dict],
    answers: dict[str, list],
    claims: list[str],
    exact: dict[str, list],
) -> None:
    answered = sum(bool(body["results"]) for body in first)
    assert answered == len(claims) if mode != "keyword" else answered >= len(claims) / 2
    # A repeated question gets the same answer, cached or not (the header: from the cache, if any).
    assert [body["results"] for body in again] == [body["results"] for body in first]
    figures[f"api_{mode}_repeated"]["cache_hits"] = sum(body["cache"] == "hit" for body in again)
    assert not any(body["cache"] == "hit" for body in first)
    # Every server (another layout, or another commit's code) gives the first one's results, or else, for
    # a search of the copy held in memory (exact where HNSW is approximate), the exact neighbours:
    # vector mode's top 5 is checked against them; in hybrid, one other candidate among the 50 moves
    # the min-max fusion's floor, so a claim's top 5 can change, and agreement is counted (the copy's
    # candidates are checked against the exact ones in candidates_beside_exact).
    results = [body["results"] for body in first]
    reference = answers.setdefault(mode, results)
    ids = [[r["id"] for r in result] for result in results]
    same = sum(ours == theirs for ours, theirs in zip(results, reference, strict=True))
    figures[f"api_{mode}"]["same_ids"] = sum(
        ours == [r["id"] for r in theirs] for ours, theirs in zip(ids, reference, strict=True)
    )
    exact_ids = sum(ours == exact[claim] for ours, claim in zip(ids, claims, strict=True))
    figures[f"api_{mode}"]["exact_ids"] = exact_ids
    if same < len(claims) and mode == "vector":
        assert figures["api_vector"]["exact_ids"] >= 0.98 * len(claims), figures["api_vector"]
    elif same < len(claims) and mode == "hybrid" and RANK_ALIKE:
        assert figures["api_hybrid"]["same_ids"] >= 0.7 * len(claims), figures["api_hybrid"]
    elif mode == "hybrid":
        pass  # a baseline that ranks otherwise (before sentence rescoring): agreement counted, not asked
    elif same < len(claims) and mode == "keyword":  # BM25 summed in numpy: the same up to rounding
        assert figures["api_keyword"]["same_ids"] == len(claims), figures["api_keyword"]
        scores = [(r["score"], t["score"]) for ours, theirs in zip(results, reference, strict=True)
                  for r, t in zip(ours, theirs, strict=True)]  # fmt: skip
        assert max(abs(a - b) for a, b in scores) <= 1e-9
    else:
        assert same == len(claims), f"{mode}: results differ from the first server's"


def print_rows(figures: dict[str, Any]) -> None:
    for name, row in figures.items():
        if not isinstance(row, dict) or "p50_ms" not in row:
            print(f"{name:28} {json.dumps(row)}")
            continue
        extra = f"  x raw: {row['x_raw_p50']} / {row['x_raw_p95']}" if "x_raw_p50" in row else ""
        extra += f" (alone: {row['x_raw_alone_p50']})" if "x_raw_alone_p50" in row else ""
        extra += f"  cache hits: {row['cache_hits']}/{row['n']}" if "cache_hits" in row else ""
        if "same_ids" in row:
            extra += f"  same as the first: {row['same_ids']}/{row['n']}"
            extra += f", exact: {row['exact_ids']}/{row['n']}"
        print(f"{name:28} {row['p50_ms']:8.2f} {row['p95_ms']:8.2f}{extra}")
