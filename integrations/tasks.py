"""Celery tasks of connected sources (on the crawl queue): thin, like ingestion/tasks.py. The decisions are
integrations.sync's; indexing is the index queue's ingestion.tasks.index_document."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from ingestion import tasks as ingestion_tasks
from integrations import sync
from sources.models import Document, Source
from sources.tenancy import workspace_scope


@shared_task(acks_late=True)
def sync_source(*, workspace_id: int, source_id: int, attempt: int = 0, requeues: int = 0) -> None:
    with workspace_scope(workspace_id):
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            return  # deleted while queued
        outcome = sync.source_sync(source=source, attempt=attempt, requeues=requeues)
        following = {"workspace_id": workspace_id, "source_id": source_id}
        if outcome.retry_in is not None:
            sync_source.apply_async(
                kwargs={**following, "attempt": attempt + 1, "requeues": requeues}, countdown=outcome.retry_in
            )
        elif outcome.requeue_in is not None:
            sync_source.apply_async(
                kwargs={**following, "attempt": attempt, "requeues": requeues + 1},
                countdown=outcome.requeue_in,
            )
        document_ids = outcome.document_ids

        def publish() -> None:
            for document_id in document_ids:
                sync_document.delay(workspace_id=workspace_id, document_id=document_id)

        transaction.on_commit(publish)


@shared_task(acks_late=True)
def sync_document(*, workspace_id: int, document_id: int, attempt: int = 0, requeues: int = 0) -> None:
    with workspace_scope(workspace_id):
        document = Document.objects.filter(id=document_id).first()
        if document is None:
            return
        outcome = sync.document_sync(document=document, attempt=attempt, requeues=requeues)
        following = {"workspace_id": workspace_id, "document_id": document_id}
        if outcome.retry_in is not None:
            sync_document.apply_async(
                kwargs={**following, "attempt": attempt + 1, "requeues": requeues}, countdown=outcome.retry_in
            )
        elif outcome.requeue_in is not None:
            sync_document.apply_async(
                kwargs={**following, "attempt": attempt, "requeues": requeues + 1},
                countdown=outcome.requeue_in,
            )
        elif outcome.index:
            transaction.on_commit(lambda: ingestion_tasks.index_document.delay(**following))
        sync.refresh_status(source_id=document.source_id)
