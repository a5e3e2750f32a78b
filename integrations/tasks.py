"""Celery tasks of connected sources (on the crawl queue): thin, like ingestion/tasks.py. The decisions are
integrations.sync's; indexing is the index queue's ingestion.tasks.index_document.

They go through the lanes and waves as a crawl does (issue #56: they were published all at once, outside
the lanes): a source's documents are put in its backlog and published CRAWL_WAVE_SIZE at a time
(lifecycle.queue_page_jobs; each sync_document pumps the next when it ends), and every job, its index job
included, is published in its source's lane (ingestion/jobs/lanes.py).

No message waits in the broker longer than pages.max_countdown() (0.9 x the visibility timeout: a message
waiting past it is handed to a second worker). A provider's longer Retry-After (up to
INTEGRATIONS_MAX_RETRY_AFTER) becomes a chain of shorter waits: the job is published with a `not_before`
time, and a delivery before it only publishes the next link and does nothing else, so a link delivered
twice does no work twice (the document's claim in integrations.sync decides who fetches).
"""

from __future__ import annotations

import time
from typing import Any

from celery import shared_task
from django.db import transaction

from ingestion import lifecycle
from ingestion import tasks as ingestion_tasks
from ingestion.jobs import lanes
from ingestion.pages import max_countdown
from integrations import sync
from sources.models import Document, Source
from sources.tenancy import workspace_scope


def schedule(task: Any, kwargs: dict, *, wait: float, lane: lanes.Lane) -> None:
    """Publish `task` to run `wait` seconds from now, with no countdown past max_countdown()."""
    _publish(task, kwargs, time.time() + wait, lane)


def _publish(task: Any, kwargs: dict, not_before: float, lane: lanes.Lane) -> None:
    wait, longest = max(not_before - time.time(), 0.0), max_countdown()
    if wait > longest:  # a link: it carries the time the job is for, unchanged down the chain
        task.apply_async(kwargs={**kwargs, "not_before": not_before}, countdown=longest, **lane.options)
    else:
        task.apply_async(kwargs=kwargs, countdown=wait, **lane.options)


def too_early(task: Any, kwargs: dict, not_before: float, lane: lanes.Lane) -> bool:
    """A link of a long wait's chain: publish the next one (or the job itself, when the rest fits in one
    countdown) and say so; False once the wait is over."""
    if not_before <= time.time():
        return False
    _publish(task, kwargs, not_before, lane)
    return True


@shared_task(acks_late=True)
def sync_source(
    *, workspace_id: int, source_id: int, attempt: int = 0, requeues: int = 0, not_before: float = 0.0
) -> None:
    following = {"workspace_id": workspace_id, "source_id": source_id}
    lane = lanes.lane_for_source_id(workspace_id, source_id)
    if too_early(sync_source, {**following, "attempt": attempt, "requeues": requeues}, not_before, lane):
        return
    with workspace_scope(workspace_id):
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            return  # deleted while queued
        outcome = sync.source_sync(source=source, attempt=attempt, requeues=requeues)
        if (retry_in := outcome.retry_in) is not None:
            again = {**following, "attempt": attempt + 1, "requeues": requeues}
            transaction.on_commit(lambda: schedule(sync_source, again, wait=retry_in, lane=lane))
        elif (requeue_in := outcome.requeue_in) is not None:
            again = {**following, "attempt": attempt, "requeues": requeues + 1}
            transaction.on_commit(lambda: schedule(sync_source, again, wait=requeue_in, lane=lane))
        # Into the source's backlog, published a wave at a time in its lane (listed now: its real size).
        lifecycle.queue_page_jobs(workspace_id=workspace_id, document_ids=list(outcome.document_ids))


@shared_task(acks_late=True)
def sync_document(
    *, workspace_id: int, document_id: int, attempt: int = 0, requeues: int = 0, not_before: float = 0.0
) -> None:
    following = {"workspace_id": workspace_id, "document_id": document_id}
    with workspace_scope(workspace_id):
        document = Document.objects.filter(id=document_id).first()
        if document is None:
            return
        lane = lanes.lane_for_source_id(workspace_id, document.source_id)
        current = {**following, "attempt": attempt, "requeues": requeues}
        if too_early(sync_document, current, not_before, lane):
            return
        outcome = sync.document_sync(document=document, attempt=attempt, requeues=requeues)
        if (retry_in := outcome.retry_in) is not None:
            again = {**following, "attempt": attempt + 1, "requeues": requeues}
            transaction.on_commit(lambda: schedule(sync_document, again, wait=retry_in, lane=lane))
        elif (requeue_in := outcome.requeue_in) is not None:
            again = {**following, "attempt": attempt, "requeues": requeues + 1}
            transaction.on_commit(lambda: schedule(sync_document, again, wait=requeue_in, lane=lane))
        elif outcome.index:
            transaction.on_commit(
                lambda: ingestion_tasks.index_document.apply_async(kwargs=following, **lane.options)
            )
        sync.refresh_status(source_id=document.source_id)
        # This document's place in its source's wave may be free now: publish the next ones.
        lifecycle.pump_pages(workspace_id=workspace_id, source_id=document.source_id)
