"""Writes to sources: create, delete. Views and tasks call these; they hold no logic of their own."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction

from agents.models import Agent
from sources.kinds import KindError, TextConfig, validate_config
from sources.models import ApiKey, Document, Source, Status, Workspace
from sources.tenancy import workspace_scope


def source_create(*, workspace: Workspace, agent_id: Any, kind: str, title: str, payload: dict) -> Source:
    """Validate and store a new source, then queue its ingestion once the transaction commits.

    Raises KindError (field -> messages) for anything a person should correct; nothing is written then.
    """
    errors: dict[str, list[str]] = {}
    with workspace_scope(workspace.id):
        agent = Agent.objects.filter(id=agent_id).first() if str(agent_id).isdigit() else None
        if agent is None:
            errors["agent"] = ["No agent with this id in your workspace."]
        try:
            config = validate_config(kind, payload)
        except KindError as exc:
            errors.update(exc.errors)
        title = (title or "").strip()
        if not title:
            errors["title"] = ["A title is required."]
        elif len(title) > 300:
            errors["title"] = ["A title is at most 300 characters."]
        if errors:
            raise KindError(errors)

        with transaction.atomic():
            if isinstance(config, TextConfig):
                source = Source.objects.create(
                    agent=agent, kind=kind, title=title, config={"chars": len(config.content)}, pages_total=1
                )
                Document.objects.create(
                    source=source,
                    title=title,
                    text=config.content,
                    content_hash=hashlib.sha256(config.content.encode()).hexdigest(),
                )
            else:  # pragma: no cover - every registered kind has a branch above
                raise KindError({"kind": [f"Kind {kind!r} cannot be created yet."]})
            _queue_ingestion(source)
    return source


def _queue_ingestion(source: Source) -> None:
    from ingestion import tasks

    workspace_id, source_id = source.workspace_id, source.id
    transaction.on_commit(lambda: tasks.index_source.delay(workspace_id=workspace_id, source_id=source_id))


def source_delete(*, source: Source) -> None:
    """Delete a source with its documents, chunks and vector points."""
    from retrieval import cache as semantic_cache
    from retrieval.services import delete_chunk_vectors

    with workspace_scope(source.workspace_id), transaction.atomic():
        chunk_ids = [str(i) for i in source.chunks.values_list("id", flat=True)]
        delete_chunk_vectors(workspace_id=source.workspace_id, chunk_ids=chunk_ids)
        source.delete()
    semantic_cache.invalidate(workspace_id=source.workspace_id, agent_id=source.agent_id)


def source_mark_failed(*, source: Source, message: str, detail: str) -> None:
    Source.unscoped.filter(id=source.id).update(
        status=Status.FAILED, error=message[:500], error_detail=detail
    )


def api_key_create(*, workspace: Workspace, name: str) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the raw key, which is never stored and cannot be shown again."""
    prefix, raw_key = ApiKey.generate()
    with workspace_scope(workspace.id):
        api_key = ApiKey.objects.create(name=name, prefix=prefix, key_hash=ApiKey.hash_key(raw_key))
    return api_key, raw_key
