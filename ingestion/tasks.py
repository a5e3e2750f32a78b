"""Celery tasks: thin wrappers that load a row by id, in its workspace scope, and call one service."""

from __future__ import annotations

from celery import shared_task

from ingestion import services
from sources.models import Source
from sources.tenancy import workspace_scope


@shared_task(acks_late=True)
def index_source(*, workspace_id: int, source_id: int) -> None:
    with workspace_scope(workspace_id):
        source = Source.objects.filter(id=source_id).first()
        if source is None:
            return  # deleted while queued
        services.source_index(source=source)
