"""The faults of the harness (scripts/chaos.py). Each takes the harness, does any set-up at once, and returns
(fault, after): `fault()` strikes mid-crawl, `after(source_ids)` runs once everything settled (then the
harness waits for it to settle again)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from chaos_services import Worker

if TYPE_CHECKING:
    from chaos import Harness  # which imports this module

Fault = Callable[[], None] | None
After = Callable[[list[int]], None] | None


def pool_kill(h: Harness) -> tuple[Fault, After]:
    def fault() -> None:
        h.workers["crawl"].kill_pool_process()
        h.workers["index"].kill_pool_process()

    return fault, None


def worker_kill(h: Harness) -> tuple[Fault, After]:
    def fault() -> None:
        for name in ("crawl", "index"):
            h.workers[name].kill()  # main process and pool, at once
        for name in ("crawl", "index"):
            h.workers[name].start()

    return fault, None


def redis_restart(h: Harness) -> tuple[Fault, After]:
    def fault() -> None:
        h.redis.kill()
        h.redis.start()

    return fault, None


def redis_lost(h: Harness) -> tuple[Fault, After]:
    def fault() -> None:
        h.redis.kill(wipe=True)  # queues, unacked messages, backlogs and host slots: all gone
        h.redis.start()

    return fault, None


def postgres_restart(h: Harness) -> tuple[Fault, After]:
    return h.pg.restart, None


def embedder_hang(h: Harness) -> tuple[Fault, After]:
    """The embedder answers after 30 s (past the index task's 8 s soft limit) for 20 s, then recovers.
    Pages indexed meanwhile fail with their class; Retry failed, as an admin would, brings them back."""

    recovery = threading.Timer(20.0, lambda: setattr(h.embedder, "embedding_delay", 0.0))

    def fault() -> None:
        h.embedder.embedding_delay = 30.0
        recovery.start()

    def after(sources: list[int]) -> None:
        from ingestion import lifecycle
        from sources.models import Source

        # The admin retries once the embedder is back: pages can all have failed before its 20 s are up,
        # and a retry into the outage fails again (seen: 2 pages failed `indexing` after the retry).
        recovery.join()
        h.hang_failures = _failures(sources)
        for source in Source.unscoped.filter(id__in=sources):
            lifecycle.retry_failed(source=source)

    return fault, after


def two_workers(h: Harness) -> tuple[Fault, After]:
    """A second worker on each queue, both taking the same source's jobs from the start."""
    extra = [Worker(f"{q}2", f"interactive,{q}", h.env, h.logs) for q in ("crawl", "index")]
    for worker in extra:
        worker.start()

    def after(_sources: list[int]) -> None:
        for worker in extra:
            worker.stop()

    return None, after


def _failures(sources: list[int]) -> dict[str, int]:
    from django.db.models import Count

    from sources.models import Document

    rows = (
        Document.unscoped.filter(source_id__in=sources, status="failed")
        .values("failure_class")
        .annotate(n=Count("id"))
    )
    return {r["failure_class"]: r["n"] for r in rows}


SCENARIOS: dict[str, Callable] = {
    "pool_kill": pool_kill,
    "worker_kill": worker_kill,
    "redis_restart": redis_restart,
    "redis_lost": redis_lost,
    "postgres_restart": postgres_restart,
    "embedder_hang": embedder_hang,
    "two_workers": two_workers,
}
