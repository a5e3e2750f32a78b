"""Writes to sources: create, delete. Views and tasks call these; they hold no logic of their own."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction

from agents.models import Agent
from sources.kinds import CRAWLED_KINDS, KindError, TextConfig, validate_config
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
        if not title and kind in CRAWLED_KINDS and isinstance(payload.get("url"), str):
            title = payload["url"].strip()[:300]  # a page is named by its address until crawled
        if not title:
            errors["title"] = ["A title is required."]
        elif len(title) > 300:
            errors["title"] = ["A title is at most 300 characters."]
        if errors:
            raise KindError(errors)

        with transaction.atomic():
            if kind in CRAWLED_KINDS:
                source = Source.objects.create(
                    agent=agent, kind=kind, title=title, config=config.model_dump(exclude_none=True)
                )
                _queue_crawl(source)
                return source
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


def _queue_crawl(source: Source) -> None:
    from ingestion import tasks

    workspace_id, source_id = source.workspace_id, source.id
    transaction.on_commit(lambda: tasks.crawl_source.delay(workspace_id=workspace_id, source_id=source_id))


def source_delete(*, source: Source) -> None:
    """Delete a source with its documents, chunks, vector points and stored files.

    The database rows go in one transaction, after the store has dropped the vector points (a store
    that fails aborts the whole delete, so no point outlives its chunk); files go once it commits.
    """
    from ingestion.services import delete_source_chunks
    from ingestion.uploads import delete_files
    from retrieval import cache as semantic_cache

    workspace_id, source_id = source.workspace_id, source.id
    with workspace_scope(workspace_id), transaction.atomic():
        delete_source_chunks(source=source)
        source.delete()
        transaction.on_commit(lambda: delete_files(workspace_id, source_id))
    semantic_cache.invalidate(workspace_id=workspace_id, agent_id=source.agent_id)


def human_size(n: int) -> str:
    """Sizes as people read them: 900 KB, 25 MB (binary units, as the limits are set)."""
    if n < 1024 * 1024:
        return f"{max(n / 1024, 0.1):.0f} KB" if n >= 1024 else f"{n} bytes"
    return f"{n / 1024 / 1024:.1f}".rstrip("0").rstrip(".") + " MB"


class UploadTooLarge(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_upload_size(upload: Any) -> None:
    """The per-file limits, checked before anything is stored."""
    from django.conf import settings

    limit = settings.UPLOAD_MAX_FILE_BYTES
    if upload.size > limit:
        raise UploadTooLarge(
            f"{upload.name} is {human_size(upload.size)}; the limit per file is {human_size(limit)}."
        )
    if upload.size == 0:
        raise KindError({"file": [f"{upload.name} is empty."]})


def upload_filename(upload: Any) -> str:
    """The file's own name, never a path: it is shown to people, not used to store the file."""
    return (upload.name or "file").replace("\\", "/").rsplit("/", 1)[-1][:200]


def upload_create(*, workspace: Workspace, agent_id: Any, files: list, title: str = "") -> list[Source]:
    """One upload source per file. Limits are checked before anything is stored."""
    from django.conf import settings

    from ingestion.uploads import store_original

    if not files:
        raise KindError({"file": ["Attach at least one file."]})
    if len(files) > settings.UPLOAD_MAX_FILES_PER_REQUEST:
        raise KindError({"file": [f"At most {settings.UPLOAD_MAX_FILES_PER_REQUEST} files at once."]})
    for upload in files:
        check_upload_size(upload)
    with workspace_scope(workspace.id):
        agent = Agent.objects.filter(id=agent_id).first() if str(agent_id).isdigit() else None
        if agent is None:
            raise KindError({"agent": ["No agent with this id in your workspace."]})
        used = sum(s.config.get("size", 0) for s in Source.objects.filter(kind="upload").only("config"))
        incoming = sum(u.size for u in files)
        if used + incoming > settings.UPLOAD_MAX_WORKSPACE_BYTES:
            raise UploadTooLarge(
                f"This workspace's files would take {human_size(used + incoming)}; "
                f"the limit is {human_size(settings.UPLOAD_MAX_WORKSPACE_BYTES)}. Delete some files first."
            )
        created = []
        with transaction.atomic():
            for upload in files:
                filename = upload_filename(upload)
                source = Source.objects.create(
                    agent=agent,
                    kind="upload",
                    title=(title if len(files) == 1 and title else filename)[:300],
                    config={"filename": filename, "size": upload.size},
                )
                path, digest = store_original(source, upload)
                source.config.update(storage_path=path, sha256=digest)
                source.save(update_fields=["config"])
                created.append(source)
                _queue_upload(source)
        return created


def _queue_upload(source: Source) -> None:
    from ingestion import tasks

    workspace_id, source_id = source.workspace_id, source.id
    transaction.on_commit(lambda: tasks.index_upload.delay(workspace_id=workspace_id, source_id=source_id))


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
