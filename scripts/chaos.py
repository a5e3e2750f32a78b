"""The fault harness (`make chaos`): crawl a local copy of the Flask docs through its sitemap and index
uploaded files on a worker set this script starts, break something mid-way, and check what is left.

    .venv/bin/python scripts/chaos.py [--quick] [--only worker_kill,redis_restart] [--json out.json]

Everything runs on loopback, in a directory of its own: its own PostgreSQL cluster and Redis server (free
ports), the test site, a fake OpenAI-compatible embedder, Celery workers (one for `crawl`, one for `index`,
two processes each) and beat. Timeouts are shortened so a run takes minutes (see FAST below); the
mechanisms are the production ones. After each fault: every page must end done or failed with its class,
no chunk duplicated or lost (per-page chunk counts against the clean run), no orphan (audit_store), and the
time from the fault to the last page settling is printed. See docs/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from chaos_report import compare, table  # noqa: E402
from chaos_services import Postgres, Redis, Supervisor, Worker, wait_until  # noqa: E402

# The production defaults are minutes; these keep a run bounded while exercising the same code.
FAST = {
    "CELERY_VISIBILITY_TIMEOUT": "60",  # production: 300
    "CRAWL_STALLED_AFTER": "90",  # production: 1800; above the longest task (an upload: 20 + 60 s)
    "SWEEP_INTERVAL": "10",  # production: 60
    # An index job embeds its chunks' sentences too (SENTENCE_VECTORS): ~2x the embedding of a job, which
    # went past 8 s on a loaded machine and failed clean pages as "took too long". Still inside the
    # visibility timeout and under CRAWL_STALLED_AFTER.
    "CELERY_TASK_SOFT_TIME_LIMIT": "16",
    "CELERY_TASK_TIME_LIMIT": "30",
    "CRAWL_PAGE_TIME_LIMIT": "25",  # hard limit 55 s, inside the visibility timeout
    "UPLOAD_TASK_TIME_LIMIT": "20",
    "CRAWL_RETRY_BACKOFF": "1,2,4",
    "CRAWL_FETCH_TIMEOUT": "5",
    "CRAWL_STRATEGIES": "http",  # no browser: the harness is about the queues, not rendering
    "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
    "DJANGO_SETTINGS_MODULE": "config.settings.local",
    "DJANGO_DEBUG": "0",
    "PYTHONUNBUFFERED": "1",
}
UPLOADS = ["footnotes.docx", "zen-of-python.docx", "tables-mammoth.docx"]
FAULT_AFTER_PAGES = 12  # the fault strikes once this many pages of the crawl are done
SETTLE_TIMEOUT = 600

MECHANISMS = {
    "clean": "baseline: the per-page chunk counts every other row is compared with",
    "pool_kill": "acks_late + reject_on_worker_lost: the killed process's task is requeued at once",
    "worker_kill": "visibility timeout (60 s here, 300 in production) gives the dead workers' unacked"
    " messages back; waves bound what they held",
    "redis_restart": "append-only file keeps queues and unacked messages; a worker that exits on the lost"
    " connection is restarted; its unacked messages come back after the visibility timeout",
    "redis_lost": "all of Redis gone: the sweeper puts back pages past their deadline or missing from the"
    " backlog (after CRAWL_STALLED_AFTER) and pumps each source again",
    "postgres_restart": "tasks cut mid-query fail; the next task reconnects; the sweeper puts the pages they"
    " held back in line (after CRAWL_STALLED_AFTER)",
    "embedder_hang": "the index task's soft time limit fails the page (class indexing) instead of hanging;"
    " Retry failed queues it again",
    "two_workers": "claims by conditional UPDATE, deterministic chunk ids, a document's chunks replaced in"
    " one transaction",
}


class Harness:
    hang_failures: dict[str, int]  # set by main before each scenario, filled by embedder_hang's `after`

    def __init__(self, base: Path, stack: ExitStack) -> None:
        self.base, self.stack = base, stack
        self.logs = base / "logs"
        self.logs.mkdir()
        self.pg, self.redis = Postgres(base), Redis(base)
        self.pg.init()
        stack.callback(self.pg.stop)
        self.redis.start()
        stack.callback(self.redis.stop)
        from tests.fakes.openai_server import FakeProvider, openai_compatible_server

        self.embedder = stack.enter_context(openai_compatible_server(FakeProvider()))
        self.env = {
            **os.environ,
            **FAST,
            "DATABASE_URL": self.pg.url,
            "REDIS_URL": self.redis.url,
            "CELERY_BROKER_URL": self.redis.url,
            "MEDIA_ROOT": str(base / "media"),
            "EMBEDDER_BACKEND": "retrieval.embedders.openai.OpenAIEmbedder",
            "EMBEDDER_BASE_URL": self.embedder.base_url,
            "EMBEDDER_API_KEY": self.embedder.api_key,
            "EMBEDDER_MODEL": "fake-embed",
        }
        os.environ.update(self.env)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        self.site = stack.enter_context(self._site())
        self.workers = {
            "crawl": Worker("crawl", "interactive,crawl", self.env, self.logs),
            "index": Worker("index", "interactive,index", self.env, self.logs),
            "beat": Worker("beat", "beat", self.env, self.logs),
        }
        for worker in self.workers.values():
            worker.start()
            stack.callback(worker.stop)
        self.supervisor = Supervisor(self.workers)
        self.supervisor.start()
        stack.callback(self.supervisor.stop)  # first, so no worker is started again while they stop

    def _site(self) -> Any:
        from tests.ingestion.crawl.servers import FLASK_DOCS, Reply, serving

        class Site:
            def __enter__(site) -> Any:
                site.context = serving(root=FLASK_DOCS)
                server = site.context.__enter__()
                pages = sorted(p.relative_to(FLASK_DOCS).as_posix() for p in FLASK_DOCS.rglob("*.html"))
                urls = [server.url("/" if p == "index.html" else f"/{p}") for p in pages]
                entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
                sitemap = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
                server.routes["/sitemap.xml"] = Reply(200, sitemap, content_type="application/xml")
                server.routes["/robots.txt"] = Reply(
                    200, "User-agent: *\nDisallow:\n", content_type="text/plain"
                )
                site.server, site.pages = server, len(urls)
                return site

            def __exit__(site, *exc: Any) -> Any:
                return site.context.__exit__(*exc)

        return Site()

    # --- one scenario -------------------------------------------------------------------------------

    def run(
        self, name: str, fault: Callable[[], None] | None, after: Callable[[list[int]], None] | None = None
    ) -> dict[str, Any]:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from agents.models import Agent
        from ingestion import lifecycle
        from sources.models import Workspace
        from sources.tenancy import workspace_scope

        workspace = db(lambda: Workspace.objects.create(name=name, slug=f"{name}-{int(time.time())}"))
        with workspace_scope(workspace.id):
            agent = Agent.objects.create(name=name)
        started, restarts = time.monotonic(), len(self.supervisor.restarts)
        sitemap = lifecycle.source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind="sitemap",
            title="Flask docs",
            payload={"url": self.site.server.url("/sitemap.xml")},
        )
        files = [
            SimpleUploadedFile(n, (ROOT.parent / "shared/data/documents/docx" / n).read_bytes())
            for n in UPLOADS
        ]
        uploads = lifecycle.upload_create(workspace=workspace, agent_id=agent.id, files=files)
        sources = [sitemap.id, *(u.id for u in uploads)]
        struck = None
        if fault is not None:
            wait_until(
                lambda: pages_done(sitemap.id) >= FAULT_AFTER_PAGES, SETTLE_TIMEOUT, "the crawl to start"
            )
            struck = time.monotonic()
            fault()
        settled = settle(sources)
        if after is not None:
            after(sources)
            settled = settle(sources)
        ended = time.monotonic()
        row = {"scenario": name, "mechanism": MECHANISMS[name], "settled": settled}
        row["worker_restarts"] = self.supervisor.restarts[restarts:]
        row["failed_before_retry"] = getattr(self, "hang_failures", {})
        row["total_s"] = round(ended - started, 1)
        row["recovery_s"] = round(ended - struck, 1) if struck else None
        row.update(outcome(workspace.id, sources))
        return row


T = TypeVar("T")


def db(read: Callable[[], T]) -> T:
    """A read that survives the harness's own PostgreSQL restarting under it."""
    from django.db import InterfaceError, OperationalError, connection

    for _ in range(100):
        try:
            return read()
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(0.5)
    return read()


def pages_done(source_id: int) -> int:
    from sources.models import Document

    return db(lambda: Document.unscoped.filter(source_id=source_id, status="done").count())


def settle(sources: list[int]) -> bool:
    from sources.models import ACTIVE_STATUSES, Document, Source

    def idle() -> bool:
        busy = Source.unscoped.filter(id__in=sources, status__in=ACTIVE_STATUSES).exists()
        return (
            not busy
            and not Document.unscoped.filter(source_id__in=sources, status__in=ACTIVE_STATUSES).exists()
        )

    try:
        wait_until(lambda: db(idle), SETTLE_TIMEOUT, "every page to settle", step=0.5)
        return True
    except TimeoutError:
        return False


def outcome(workspace_id: int, sources: list[int]) -> dict:
    """Per-page results: status, failure class, chunk count; chunk duplicates by (document, position);
    the audit's inconsistencies."""
    import io

    from django.core.management import call_command
    from django.db.models import Count

    from sources.models import Chunk, Document

    documents = db(
        lambda: list(
            Document.unscoped.filter(source_id__in=sources)
            .annotate(n_chunks=Count("chunks"))
            .values_list("source__title", "url", "title", "status", "failure_class", "n_chunks")
        )
    )
    pages: dict[str, tuple[str, str, int]] = {}
    for source_title, url, title, status, failure, chunks in documents:
        key = url or f"{source_title}#{title}"
        pages[key] = (*pages.get(key, (status, failure, 0))[:2], pages.get(key, ("", "", 0))[2] + chunks)
    doubled = db(
        lambda: (
            Chunk.unscoped.filter(source_id__in=sources)
            .values("document_id", "position")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
    )
    from django.core.management.base import CommandError

    from sources.models import Source

    try:
        report = io.StringIO()
        call_command("audit_store", "--workspace", str(workspace_id), "--json", stdout=report)
        orphans = json.loads(report.getvalue())["inconsistencies"]
    except CommandError:
        orphans = None  # a checkout without audit_store (the baseline run on older code)
    attempts = db(
        lambda: list(Document.unscoped.filter(source_id__in=sources).values_list("attempts", flat=True))
    )
    resumed = db(lambda: Source.unscoped.filter(id__in=sources, state__has_key="sweeps").count())
    return {
        "recrawled_pages": sum(1 for a in attempts if a >= 2),
        "resumed_sources": resumed,
        "pages": pages,
        "doubled_positions": doubled,
        "orphans": orphans,
        "unclassed_failures": sum(1 for s, f, _ in pages.values() if s == "failed" and not f),
        "in_flight": sum(1 for s, _, _ in pages.values() if s not in ("done", "failed", "skipped")),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="comma-separated scenarios (clean always runs first)")
    parser.add_argument("--quick", action="store_true", help="clean, pool_kill and worker_kill only (CI)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs) afterwards")
    args = parser.parse_args()
    from chaos_scenarios import SCENARIOS

    chosen = [s for s in SCENARIOS if s != "clean"]
    if args.quick:
        chosen = ["pool_kill", "worker_kill"]
    if args.only:
        chosen = [s for s in args.only.split(",") if s and s != "clean"]
    rows = []
    # A plain kill of the driver still stops every process it started (the ExitStack unwinds).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with ExitStack() as stack:
        base = Path(tempfile.mkdtemp(prefix="grounded-chaos-", dir="/var/tmp"))
        if not args.keep:
            stack.callback(shutil.rmtree, base, ignore_errors=True)
        print(f"chaos: working in {base}", flush=True)
        harness = Harness(base, stack)
        clean = harness.run("clean", None)
        rows.append({**clean, **compare(clean, clean)})
        print(f"chaos: clean run settled in {clean['total_s']}s", flush=True)
        for name in chosen:
            fault, after = SCENARIOS[name](harness)
            harness.hang_failures = {}  # set by embedder_hang's `after`
            row = harness.run(name, fault, after)
            rows.append({**row, **compare(row, clean)})
            took = (
                "no fault to recover from"
                if row["recovery_s"] is None
                else f"recovered in {row['recovery_s']}s"
            )
            print(f"chaos: {name}: {took}", flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(
            json.dumps([{k: v for k, v in r.items() if k != "pages"} for r in rows], indent=2)
        )
    healthy = all(
        r["settled"] and not r["in_flight"] and not r["unclassed_failures"] and r["orphans"] == 0
        and not r["duplicated_chunks"] and not r["lost_chunks"] and not r["extra_failed"]
        for r in rows
    )  # fmt: skip
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
