"""Celery tasks: thin wrappers that load a row by id, in its workspace scope, and call one service.

Routing (crawl_* on `crawl`, index_* on `index`), acks_late, prefetch and time limits live in
settings. Retries are decided by ingestion.pages by failure class; the task only schedules them. What a
source's ingestion means is its kind's (ingestion/kinds/); new work is queued by ingestion.lifecycle.
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init
from django.conf import settings
from django.db import transaction

from ingestion import expansion, indexing, lifecycle, pages
from ingestion.crawl import hosts, robots
from ingestion.crawl.fetch import fetch_policy
from ingestion.jobs import lanes, sweeper
from ingestion.kinds.registry import get_kind
from sources.models import Document, Source
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)


@worker_process_init.connect
def warm_embedder(**_kwargs: object) -> None:
    """Every worker process takes interactive work (ingestion/jobs/lanes.py), so each loads the embedder
    before its first job: a crawl process would otherwise load it on a small source's first job, which then
    waited seconds for it instead of starting at once (docs/BENCHMARKS.md, "Fair work across workspaces")."""
    if not settings.INGESTION_LANES:
        return
    from retrieval.embedders.base import EmbeddingError
    from retrieval.vectors import embed_texts

    started = time.perf_counter()
    try:
        embed_texts(["warm-up"])
    except (EmbeddingError, OSError):  # a worker that cannot embed yet still crawls; its index jobs say why
        log.exception("could not load the embedder at worker start")
        return
    # The ingestion benchmark starts its clock once every worker process has said this.
    log.info("embedder warm after %.2f s", time.perf_counter() - started)


@shared_task(acks_late=True)
def index_source(*, workspace_id: int, source_id: int) -> None:
    with workspace_scope(workspace_id):
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            return  # deleted while queued
        try:
            left = get_kind(source.kind).index(source=source)
        except SoftTimeLimitExceeded:
            indexing.source_timed_out(source=source)
            return
        lifecycle.queue_index_jobs(workspace_id=workspace_id, document_ids=left)


# The same work with the parser's longer time limit: a file is parsed in the task.
@shared_task(
    acks_late=True,
    soft_time_limit=settings.UPLOAD_TASK_TIME_LIMIT,
    time_limit=settings.UPLOAD_TASK_TIME_LIMIT + 60,
)
def index_upload(*, workspace_id: int, source_id: int) -> None:
    with workspace_scope(workspace_id):
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            return
        get_kind(source.kind).index(source=source)


@shared_task(acks_late=True)
def crawl_source(*, workspace_id: int, source_id: int) -> None:
    with workspace_scope(workspace_id):
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            return
        document_ids = expansion.source_expand(source=source)
        lifecycle.queue_page_jobs(workspace_id=workspace_id, document_ids=document_ids)
        indexing.source_refresh_status(source_id=source_id)


@shared_task(
    acks_late=True,
    soft_time_limit=settings.CRAWL_PAGE_TIME_LIMIT,
    time_limit=settings.CRAWL_PAGE_TIME_LIMIT + 30,
)
def crawl_page(
    *,
    workspace_id: int,
    document_id: int,
    attempt: int = 0,
    requeues: int = 0,
    waits: int = 0,
    reserved_at: float = 0.0,
) -> None:
    with workspace_scope(workspace_id):
        document = Document.objects.filter(id=document_id).first()
        if document is None:
            return
        slot = hosts.acquire(
            document.url,
            crawl_delay=robots.crawl_delay(document.url, fetch_policy(), cap=settings.CRAWL_MAX_CRAWL_DELAY),
            reserved_at=reserved_at,
            max_wait=min(settings.CRAWL_HOST_MAX_WAIT, pages.max_countdown()),
        )
        lane = lanes.lane_for_source_id(workspace_id, document.source_id).options
        if not slot.granted and waits < settings.CRAWL_MAX_HOST_WAITS:
            # The host is busy or asks for spacing: come back when our turn should come (spends no attempt).
            pages.page_waits(document=document, seconds=slot.wait)
            crawl_page.apply_async(
                kwargs={
                    "workspace_id": workspace_id,
                    "document_id": document_id,
                    "attempt": attempt,
                    "requeues": requeues,
                    "waits": waits + 1,
                    "reserved_at": slot.reserved_at,
                },
                countdown=slot.wait,
                **lane,
            )
            return
        try:
            outcome = pages.document_crawl(document=document, attempt=attempt, requeues=requeues)
        except SoftTimeLimitExceeded:
            pages.page_timed_out(document=document)
            outcome = pages.PageOutcome()
        finally:
            if slot.lease:
                hosts.release(document.url, slot.lease)
        # Links the page added to its source join the backlog behind the pages already listed.
        lifecycle.queue_page_jobs(workspace_id=workspace_id, document_ids=list(outcome.follow))
        following = {"workspace_id": workspace_id, "document_id": document_id}
        # Every countdown stays inside the broker's visibility timeout (see pages.max_countdown).
        if outcome.retry_in is not None:
            crawl_page.apply_async(
                kwargs={**following, "attempt": attempt + 1, "requeues": requeues},
                countdown=min(outcome.retry_in, pages.max_countdown()),
                **lane,
            )
        elif outcome.requeue_in is not None:
            crawl_page.apply_async(
                kwargs={**following, "attempt": attempt, "requeues": requeues + 1},
                countdown=min(outcome.requeue_in, pages.max_countdown()),
                **lane,
            )
        elif outcome.index:
            transaction.on_commit(lambda: index_document.apply_async(kwargs=following, **lane))
        indexing.source_refresh_status(source_id=document.source_id)
        # This page's place in its source's wave may be free now: publish the next pages.
        lifecycle.pump_pages(workspace_id=workspace_id, source_id=document.source_id)


@shared_task(acks_late=True)
def index_document(*, workspace_id: int, document_id: int) -> None:
    """Index this document and, in the same pass, the workspace's other crawled pages waiting for their own
    jobs (those jobs then find nothing left to claim): see indexing.index_ready."""
    with workspace_scope(workspace_id):
        passed = indexing.index_ready(workspace_id=workspace_id, document_id=document_id)
        for source_id in passed.sources:
            indexing.source_refresh_status(source_id=source_id)
        if passed.more is not None:
            # Documents queued in batches (lifecycle.queue_index_jobs) have no job each: what this job's
            # budget left waiting gets the next one.
            following = {"workspace_id": workspace_id, "document_id": passed.more}
            lane = lanes.lane_for_documents(workspace_id, [passed.more]).options
            transaction.on_commit(lambda: index_document.apply_async(kwargs=following, **lane))


@shared_task(acks_late=True)
def crawl_sweep_stalled() -> dict[str, int]:
    return sweeper.sweep_stalled()


@shared_task(acks_late=True)
def crawl_sync_due() -> int:
    """The beat's freshness tick: start the sources whose next sync is due."""
    return len(lifecycle.sync_due_sources())
