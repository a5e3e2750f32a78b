"""Every write to a source's life: create, upload, replace an upload, delete, reindex, recrawl, cancel, retry
failed pages, index a skipped page anyway, change how its text is cut into passages, its audiences and its
metadata. The API, the web UI, the Django admin, the widget's visited pages and the management commands all
call these, and this is the only module that queues ingestion work (besides a task re-queueing itself).

What differs by kind is asked of the kind (ingestion/kinds/); nothing here names one.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from ingestion import chunk_settings, freshness, labels
from ingestion import files as storage
from ingestion.indexing import batch_budget, delete_source_chunks
from ingestion.jobs import backlog, lanes
from ingestion.kinds.config import KindConfig, KindError
from ingestion.kinds.registry import get_kind, validate_config
from ingestion.kinds.upload import UploadKind, UploadTooLarge, check_upload_size, human_size, upload_filename
from ingestion.pages import fetch_again, max_countdown
from ingestion.status import source_refresh_status
from retrieval import cache as semantic_cache
from sources import quotas
from sources.models import ACTIVE_STATUSES, Document, Schedule, Source, Status, Workspace
from sources.tenancy import workspace_scope

__all__ = [
    "KindError",
    "UploadTooLarge",
    "index_anyway",
    "pump_pages",
    "queue_index_jobs",
    "queue_page_jobs",
    "retry_failed",
    "settings_then_labels",
    "source_cancel",
    "source_create",
    "source_delete",
    "source_index_now",
    "source_recrawl",
    "source_reindex",
    "source_resume",
    "source_set_chunking",
    "source_set_labels",
    "source_update",
    "sync_due_sources",
    "upload_create",
    "upload_replace",
]


def _agent(agent_id: Any) -> Any:
    """The agent of that id in the current workspace, or None. The model is reached through the source's
    foreign key, so this layer does not import the agents app that sits above it."""
    agent_model: Any = Source._meta.get_field("agent").related_model  # agents.models.Agent
    return agent_model.objects.filter(id=agent_id).first() if str(agent_id).isdigit() else None


def _queue(task_name: str, source: Source, countdown: float | None = None) -> None:
    from ingestion import tasks

    # A kind of a layer above (integrations) names its own task by dotted path.
    task = import_string(task_name) if "." in task_name else getattr(tasks, task_name)
    kwargs = {"workspace_id": source.workspace_id, "source_id": source.id}
    if countdown is not None:
        # A message waiting past the broker's visibility timeout is handed to a second worker (pages.py).
        countdown = min(countdown, max_countdown())
    # Read again: the kind's create() stored what the source's work is (a text's length) on the row.
    lane = lanes.lane_for_source_id(source.workspace_id, source.id)
    transaction.on_commit(lambda: task.apply_async(kwargs=kwargs, countdown=countdown, **lane.options))


# --- creating ------------------------------------------------------------------------------------------


def source_create(
    *,
    workspace: Workspace,
    agent_id: Any,
    kind: str,
    title: str,
    payload: dict,
    schedule: str | None = None,
    labels: dict | None = None,
) -> Source:
    """Validate and store a new source, then queue its ingestion once the transaction commits. `schedule`
    (off/hourly/daily/weekly) applies to kinds with something to sync again; None: the workspace's default.
    `labels`: its audiences and metadata as ingestion.labels.labels_config made them.

    Raises KindError (field -> messages) for anything a person should correct, QuotaExceeded when the
    workspace's plan has no room for it; nothing is written then.
    """
    errors: dict[str, list[str]] = {}
    with workspace_scope(workspace.id):
        agent = _agent(agent_id)
        if agent is None:
            errors["agent"] = ["No agent with this id in your workspace."]
        config = None
        try:
            source_kind = get_kind(kind)
            config = validate_config(kind, payload)
        except KindError as exc:
            errors.update(exc.errors)
        title = (title or "").strip() or (source_kind.default_title(config) if config is not None else "")
        # Only when the rest was valid: an empty address must not be reported under an optional title.
        if not title and config is not None:
            errors["title"] = ["A title is required."]
        elif len(title) > 300:
            errors["title"] = ["A title is at most 300 characters."]
        chosen: str = Schedule.OFF
        if "kind" not in errors:
            try:
                chosen = freshness.schedule_for_new(
                    resyncable=source_kind.resyncable, workspace=workspace, requested=schedule
                )
            except ValueError as exc:
                errors["schedule"] = [str(exc)]
        if errors:
            raise KindError(errors)
        config = cast(KindConfig, config)  # valid: a kind or config that failed put its error in `errors`
        # What the request brings is what will be stored (a pasted text; an address is a few bytes).
        incoming = len(json.dumps(payload, default=str).encode())
        with transaction.atomic():
            # Holds the workspace (sources.quotas) until the source is committed: requests at once take turns.
            quotas.check_sources_create(workspace, incoming_bytes=incoming, fetches=source_kind.fetches_pages)
            source = Source.objects.create(
                agent=agent,
                kind=kind,
                title=title,
                config={**source_kind.settings_of(config), **(labels or {})},
                schedule=chosen,
            )
            source_kind.create(source=source, config=config)
            _queue(source_kind.ingest_task, source)
    return source


def upload_create(
    *, workspace: Workspace, agent_id: Any, files: list, title: str = "", labels: dict | None = None
) -> list[Source]:
    """One upload source per file, each with the same `labels` (audiences, metadata). Limits are checked
    before anything is stored."""
    if not files:
        raise KindError({"file": ["Attach at least one file."]})
    if len(files) > settings.UPLOAD_MAX_FILES_PER_REQUEST:
        raise KindError({"file": [f"At most {settings.UPLOAD_MAX_FILES_PER_REQUEST} files at once."]})
    for upload in files:
        check_upload_size(upload)
    with workspace_scope(workspace.id):
        agent = _agent(agent_id)
        if agent is None:
            raise KindError({"agent": ["No agent with this id in your workspace."]})
        incoming = sum(u.size for u in files)
        created = []
        with transaction.atomic():
            # Holds the workspace (sources.quotas) until the sources are committed, so the files' sizes
            # below are counted while no other upload can add to them either.
            quotas.check_sources_create(
                workspace, sources=len(files), documents=len(files), incoming_bytes=incoming
            )
            uploads = Source.objects.filter(kind=UploadKind.name).only("state")
            used = sum(s.state.get("size", 0) for s in uploads)
            if used + incoming > settings.UPLOAD_MAX_WORKSPACE_BYTES:
                raise UploadTooLarge(
                    f"This workspace's files would take {human_size(used + incoming)}; "
                    f"the limit is {human_size(settings.UPLOAD_MAX_WORKSPACE_BYTES)}. "
                    "Delete some files first."
                )
            for upload in files:
                filename = upload_filename(upload)
                source = Source.objects.create(
                    agent=agent,
                    kind=UploadKind.name,
                    title=(title if len(files) == 1 and title else filename)[:300],
                    config={"filename": filename, **(labels or {})},
                    state={"size": upload.size},
                )
                _store(source, upload)
                created.append(source)
                _queue(UploadKind.ingest_task, source)
        return created


def _store(source: Source, upload: Any) -> None:
    path, digest = storage.store_original(source, upload)
    source.state.update(storage_path=path, sha256=digest)
    Source.objects.filter(id=source.id).update(state=source.state)


def upload_replace(*, source: Source, upload: Any) -> None:
    """Store a new original for a file source (e.g. one whose stored text is gone), then index it again."""
    if source.kind != UploadKind.name:
        raise KindError({"file": ["Only file sources can be uploaded again."]})
    if source.status in ACTIVE_STATUSES:
        raise KindError({"file": ["This file is being processed; wait until it has finished."]})
    check_upload_size(upload)
    with workspace_scope(source.workspace_id), transaction.atomic():
        growth = upload.size - int(source.state.get("size", 0))
        if growth > 0:  # holds the workspace until the new size is committed (sources.quotas)
            quotas.check(source.workspace, "stored_bytes", growth)
        storage.delete_files(source.workspace_id, source.id)  # stale segments must not be read back
        labels = {k: v for k, v in source.config.items() if k in ("audience", "metadata")}
        source.config = {"filename": upload_filename(upload), **labels}
        source.state = {"size": upload.size}
        _store(source, upload)
        Source.objects.filter(id=source.id).update(config=source.config, error="", error_detail="")
        source_reindex(source=source)


# --- deleting ------------------------------------------------------------------------------------------


# A delete that finds rows a running job committed under it runs again (see source_delete).
DELETE_ATTEMPTS = 3


def source_delete(*, source: Source) -> None:
    """Delete a source with its documents, chunks, vector points and stored files.

    The database rows go in one transaction, after the store has dropped the vector points (a store
    that fails aborts the whole delete, so no point outlives its chunk); files go once it commits.

    A running job never makes a delete fail (issue #56: a delete while the index job stored passages
    answered 500 and kept the source). The source's documents are locked first, in id order: the delete
    waits for a document being stored, then removes what was stored with it, and a job that comes to store
    after the delete finds its document gone and writes nothing (ingestion/jobs/claims.py). Rows a job inserts
    without holding one of them (a crawl's new pages, an upload's parts) and commits while the delete runs
    would break its foreign keys at commit: they are checked before the delete ends, and it runs again,
    seeing them.
    """
    workspace_id, source_id = source.workspace_id, source.id
    with workspace_scope(workspace_id), transaction.atomic():
        for attempt in range(1, DELETE_ATTEMPTS + 1):
            try:
                with transaction.atomic():
                    _delete_source_rows(source)
                break
            except IntegrityError:
                if attempt == DELETE_ATTEMPTS:
                    raise
        transaction.on_commit(lambda: storage.delete_files(workspace_id, source_id))
        transaction.on_commit(lambda: backlog.clear(source_id))
    semantic_cache.invalidate(workspace_id=workspace_id, agent_id=source.agent_id)


def _delete_source_rows(source: Source) -> None:
    list(
        Document.objects.select_for_update()
        .filter(source_id=source.id)
        .order_by("id")
        .values_list("id", flat=True)
    )
    delete_source_chunks(source=source)
    # By query, not source.delete(): that clears the instance's id, which a second attempt needs.
    Source.objects.filter(id=source.id).delete()
    connection.check_constraints()  # deferred foreign keys, checked now, inside this attempt


# --- processing again ----------------------------------------------------------------------------------


def source_reindex(*, source: Source, queue: bool = True) -> bool:
    """Chunk and embed a source again from what is kept: a text's content, an upload's segments, a
    crawled page's extracted text. Nothing is fetched or uploaded again.

    With queue=False the source is only marked pending; the caller runs `source_index_now` itself
    (the `reindex` command does, to rebuild the vector index once after a bulk reindex)."""
    kind = get_kind(source.kind)
    with workspace_scope(source.workspace_id):
        updated = (
            Source.objects.filter(id=source.id)
            .exclude(status__in=ACTIVE_STATUSES)
            .update(status=Status.PENDING, error="", error_detail="")
        )
        if not updated:
            return False
        kind.prepare_reindex(source=source)
        if queue:
            _queue(kind.reindex_task, source)
    return True


def source_index_now(*, source: Source) -> None:
    """What the index task of a pending source does, in this process (every document here, none queued)."""
    with workspace_scope(source.workspace_id):
        get_kind(source.kind).index(source=source, inline=True)


def source_resume(*, source: Source) -> None:
    """Queue the index job of a source the sweeper put back in line (its dead worker never finished it):
    the job indexes what is pending; nothing is reset or fetched again."""
    with workspace_scope(source.workspace_id):
        _queue(get_kind(source.kind).reindex_task, source)


def source_recrawl(*, source: Source) -> bool:
    """Fetch a web or connected source again; unchanged pages are not re-embedded. False for kinds that
    fetch nothing and for a source already crawling."""
    kind = get_kind(source.kind)
    if not kind.resyncable:
        return False
    with workspace_scope(source.workspace_id):
        updated = (
            Source.objects.filter(id=source.id)
            .exclude(status__in=[Status.PENDING, Status.CRAWLING])
            .update(status=Status.PENDING, updated_at=timezone.now())
        )
        if updated:
            _queue(kind.ingest_task, source)
    return bool(updated)


def retry_failed(*, source: Source) -> int:
    """Queue the source's failed pages again (fetched again for web kinds, indexed again otherwise).
    Returns how many were queued; 0 when there are none or the source is busy."""
    kind = get_kind(source.kind)
    with workspace_scope(source.workspace_id), transaction.atomic():
        if Source.objects.filter(id=source.id, status__in=ACTIVE_STATUSES).exists():
            return 0
        failed = list(
            Document.objects.filter(source_id=source.id, status=Status.FAILED).values_list("id", flat=True)
        )
        if not failed:
            return 0
        if not kind.fetches_pages:
            return len(failed) if source_reindex(source=source) else 0
        # Fetching them again counts against today's crawl pages (QuotaExceeded when none are left).
        failed = failed[: quotas.take(source.workspace, "crawl_pages", len(failed))]
        Document.objects.filter(id__in=failed).update(
            status=Status.PENDING, error="", error_detail="", due_by=None, updated_at=timezone.now()
        )
        source_refresh_status(source_id=source.id)
        queue_page_jobs(workspace_id=source.workspace_id, document_ids=failed)
    return len(failed)


EMPTY_SEARCH_PAGE = (
    "This is the site's search page and it has no text of its own: its results are built by scripts for a "
    "query, so there is nothing to index. A sync reads it again."
)


def index_anyway(*, document: Document) -> None:
    """The admin's "index it anyway" for a skipped page: the decision is kept on the document (keep_short,
    which a re-sync keeps), and the page is queued like a retry of it, fetched again and kept however little
    text it has. KindError when the page is not skipped, its source is busy (as retry_failed refuses), or it
    is a search page with no text of its own (nothing to index: its results are built for a query);
    QuotaExceeded when today's crawl pages are used up."""
    with workspace_scope(document.workspace_id), transaction.atomic():
        if Source.objects.filter(id=document.source_id, status__in=ACTIVE_STATUSES).exists():
            raise KindError({"source": ["This source is being processed; try again when it has finished."]})
        if Document.objects.filter(
            id=document.id, status=Status.SKIPPED, skip_reason="search_page", skipped_chars=0
        ).exists():
            raise KindError({"document": [EMPTY_SEARCH_PAGE]})
        claimed = Document.objects.filter(id=document.id, status=Status.SKIPPED).update(
            keep_short=True, **fetch_again()
        )
        if not claimed:  # not skipped (any more: another request may have come first)
            raise KindError({"document": ["Only a skipped page can be indexed anyway; this one isn't."]})
        # Fetching it again counts against today's crawl pages; none left rolls the claim back.
        quotas.take(document.source.workspace, "crawl_pages", 1)
        source_refresh_status(source_id=document.source_id)
        queue_page_jobs(workspace_id=document.workspace_id, document_ids=[document.id])


def _queue_skipped(source: Source) -> int:
    """Fetch a source's skipped pages again (its keep_short_pages was just turned on), like a retry of them.
    Nothing when the source is busy: its running crawl reads the option for the pages it has still to fetch,
    and the next sync fetches the skipped ones again."""
    if Source.objects.filter(id=source.id, status__in=ACTIVE_STATUSES).exists():
        return 0
    skipped = list(
        Document.objects.filter(source_id=source.id, status=Status.SKIPPED).values_list("id", flat=True)
    )
    if not skipped:
        return 0
    # As many as today's crawl pages allow; the next sync fetches the rest.
    skipped = skipped[: quotas.take_up_to(source.workspace, "crawl_pages", len(skipped))]
    Document.objects.filter(id__in=skipped, status=Status.SKIPPED).update(**fetch_again())
    source_refresh_status(source_id=source.id)
    queue_page_jobs(workspace_id=source.workspace_id, document_ids=skipped)
    return len(skipped)


def queue_page_jobs(*, workspace_id: int, document_ids: list[int]) -> None:
    """Put pages in their source's crawl backlog and publish the first wave, once the transaction commits.

    No page job is published with a countdown for staggering: the per-host slots (ingestion/crawl/hosts.py)
    space the requests, and a wave of CRAWL_WAVE_SIZE pages per source keeps any one worker from holding
    a whole crawl (see docs/RELIABILITY.md)."""
    if not document_ids:
        return

    def publish() -> None:
        with workspace_scope(workspace_id):
            rows = Document.objects.filter(id__in=document_ids).values_list("source_id", "id")
        by_source: dict[int, list[int]] = {}
        for source_id, document_id in rows:
            by_source.setdefault(source_id, []).append(document_id)
        for source_id, ids in by_source.items():
            backlog.push(source_id, sorted(ids))
            pump_pages(workspace_id=workspace_id, source_id=source_id)

    transaction.on_commit(publish)


def pump_pages(*, workspace_id: int, source_id: int) -> int:
    """Publish the source's next backlog pages until CRAWL_WAVE_SIZE of its pages are in flight (crawling,
    queued, or waiting on a retry or a busy host). Each page job calls this when it ends, and the sweeper
    calls it for every source with a backlog, so a lost pump cannot stall a crawl. Returns how many pages
    were published.

    A page is published only by the conditional UPDATE that gives it its deadline (`due_by`, which the
    sweeper judges it by), so two pumps never publish the same page twice."""
    from ingestion import tasks

    published: list[int] = []
    with workspace_scope(workspace_id):
        pages = Document.objects.filter(source_id=source_id)
        in_flight = pages.filter(
            Q(status=Status.CRAWLING) | Q(status=Status.PENDING, due_by__isnull=False)
        ).count()
        free = settings.CRAWL_WAVE_SIZE - in_flight
        while free > 0:
            candidates = backlog.pop(source_id, free)
            if not candidates:
                break
            now = timezone.now()
            deadline = now + timedelta(seconds=settings.CRAWL_STALLED_AFTER)
            for document_id in candidates:
                claimed = pages.filter(id=document_id, status=Status.PENDING, due_by__isnull=True).update(
                    due_by=deadline, updated_at=now
                )
                if claimed:
                    published.append(document_id)
                    free -= 1

    lane, task = lanes.NO_LANE, tasks.crawl_page
    if published:
        lane = lanes.lane_for_source_id(workspace_id, source_id)
        with workspace_scope(workspace_id):
            kind = Source.objects.filter(id=source_id).values_list("kind", flat=True).first()
        # A connector's documents are fetched by its own task (issue #56: in waves, like a crawl's pages).
        page_task = get_kind(kind).page_task if kind else None
        if page_task and "." in page_task:
            task = import_string(page_task)

    def publish() -> None:
        for document_id in published:
            kwargs = {"workspace_id": workspace_id, "document_id": document_id}
            task.apply_async(kwargs=kwargs, **lane.options)

    transaction.on_commit(publish)
    return len(published)


def queue_index_jobs(*, workspace_id: int, document_ids: list[int]) -> None:
    """Index jobs for documents, once the transaction that wrote them commits: a source too big to index
    within one task's time limit, documents pushed through the documents API (ingestion/push/), pages the
    sweeper put back. One job per batch (INDEX_BATCH_MAX_DOCUMENTS), not per document: each job claims
    its document with the others waiting (indexing.index_ready), so the rest go to indexing, where any
    index job takes them, and a job its budget cut short queues the next one (tasks.index_document)."""
    from ingestion import tasks

    if not document_ids:
        return
    ids = sorted(set(document_ids))
    leads = ids[:: batch_budget()[1]]
    lane = lanes.lane_for_documents(workspace_id, ids)

    def publish() -> None:
        with workspace_scope(workspace_id):
            Document.objects.filter(id__in=ids, status=Status.PENDING, due_by__isnull=True).update(
                status=Status.INDEXING, updated_at=timezone.now()
            )
        for document_id in leads:
            kwargs = {"workspace_id": workspace_id, "document_id": document_id}
            tasks.index_document.apply_async(kwargs=kwargs, **lane.options)

    transaction.on_commit(publish)


def source_cancel(*, source: Source, by: str) -> bool:
    """Stop a source's work in progress: its pending and running pages fail with a reason (queued jobs
    then find nothing to claim), and the source settles to done or failed from what finished."""
    with workspace_scope(source.workspace_id):
        cancelled = Document.objects.filter(source_id=source.id, status__in=ACTIVE_STATUSES).update(
            status=Status.FAILED, error="Cancelled by an operator.", error_detail=f"cancelled by {by}"
        )
        active = Source.objects.filter(id=source.id, status__in=ACTIVE_STATUSES)
        if not cancelled and not active.exists():
            return False
        source_refresh_status(source_id=source.id)
        Source.objects.filter(id=source.id, status__in=ACTIVE_STATUSES).update(
            status=Status.FAILED, error="Cancelled by an operator.", error_detail=f"cancelled by {by}"
        )
    return True


# --- chunking ------------------------------------------------------------------------------------------


def source_set_chunking(*, source: Source, values: dict[str, Any], reindex: bool = True) -> bool:
    """Give a source new chunking settings (absent or empty: the deployment's default) and index it again
    from what is kept, so every passage is cut the new way. Returns whether anything changed. A source being
    processed is refused: its passages would be cut two ways at once. `reindex=False`: the caller indexes it
    again itself (a form that also changes its labels, which reindex it, does so once)."""
    chosen = chunk_settings.validated(values)
    current = {k: v for k, v in source.config.items() if k in chunk_settings.FIELDS}
    if chosen == current:
        return False
    with workspace_scope(source.workspace_id), transaction.atomic():
        locked = Source.objects.select_for_update().get(id=source.id)
        if locked.status in ACTIVE_STATUSES:
            raise KindError(
                {"chunk_size": ["This source is being processed; change its chunking once it has finished."]}
            )
        locked.config = {**chunk_settings.without_chunking(locked.config), **chosen}
        Source.objects.filter(id=source.id).update(config=locked.config)
        source.config = locked.config
        if reindex and (locked.chunks_count or locked.documents.exists()):
            source_reindex(source=locked)
    semantic_cache.invalidate(workspace_id=source.workspace_id, agent_id=source.agent_id)
    return True


def settings_then_labels(*, source: Source, chunking: dict[str, Any] | None, set_labels: Any) -> None:
    """Change a source's chunking and then its labels (`set_labels()`, which indexes it again when they
    change) with one reindex at most: when only the chunking changed, it is indexed again here."""
    changed = chunking is not None and source_set_chunking(source=source, values=chunking, reindex=False)
    relabelled = set_labels()
    if changed and not relabelled:
        with workspace_scope(source.workspace_id):
            if source.chunks_count or Document.objects.filter(source_id=source.id).exists():
                source_reindex(source=source)


# --- audiences and metadata ---------------------------------------------------------------------------


def source_set_labels(*, source: Source, audiences: Any = None, metadata: Any = None) -> bool:
    """Give a source new audiences and/or metadata, and index it again so every chunk carries them (the
    vectors and keyword postings of both stores are rewritten with the chunks). Returns whether anything
    changed. A source being processed is refused: its chunks would carry old and new labels mixed."""
    changes = labels.labels_config(audiences=audiences, metadata=metadata)
    current_audiences, current_metadata = labels.source_labels(source)
    changed = {
        name: value
        for name, value in changes.items()
        if value != (current_audiences if name == "audience" else current_metadata)
    }
    if not changed:
        return False
    with workspace_scope(source.workspace_id), transaction.atomic():
        locked = Source.objects.select_for_update().get(id=source.id)
        if locked.status in ACTIVE_STATUSES:
            field = "audiences" if "audience" in changed else "metadata"
            raise KindError({field: ["This source is being processed; change it once it has finished."]})
        locked.config = {**locked.config, **changed}
        Source.objects.filter(id=source.id).update(config=locked.config)
        source.config = locked.config
        if locked.chunks_count or locked.documents.exists():
            source_reindex(source=locked)
    semantic_cache.invalidate(workspace_id=source.workspace_id, agent_id=source.agent_id)
    return True


# --- freshness ---------------------------------------------------------------------------------------


def source_update(
    *,
    source: Source,
    title: str | None = None,
    schedule: str | None = None,
    paused: bool | None = None,
    hidden_while_paused: bool | None = None,
    keep_short_pages: bool | None = None,
) -> Source:
    """Change a source's title, sync schedule, pause, whether a paused source's passages are left out of
    search (they are kept, never deleted), and whether its short pages are indexed rather than skipped
    (turned on, its skipped pages are fetched again now; turned off, short pages already indexed stay until
    they change). Raises KindError for anything a person should correct."""
    kind = get_kind(source.kind)
    errors: dict[str, list[str]] = {}
    if keep_short_pages is not None and "keep_short_pages" not in kind.config_model.model_fields:
        errors["keep_short_pages"] = ["This kind of source has no web pages to keep or skip."]
    if title is not None:
        title = title.strip()
        if not title:
            errors["title"] = ["A title is required."]
        elif len(title) > 300:
            errors["title"] = ["A title is at most 300 characters."]
    if schedule is not None:
        if schedule not in Schedule.values:
            errors["schedule"] = [f"Choose one of: {', '.join(Schedule.values)}."]
        elif not kind.resyncable and schedule != Schedule.OFF:
            errors["schedule"] = ["This kind of source has nothing to sync again; its schedule is off."]
    if errors:
        raise KindError(errors)
    changes: dict[str, Any] = {}
    if title is not None:
        changes["title"] = title
    if schedule is not None:
        changes["schedule"] = schedule
    if paused is not None:
        changes["paused"] = paused
    if hidden_while_paused is not None:
        changes["hidden_while_paused"] = hidden_while_paused
    keeps_more = keep_short_pages and not source.config.get("keep_short_pages")
    if keep_short_pages is not None and keep_short_pages != bool(source.config.get("keep_short_pages")):
        changes["config"] = {**source.config, "keep_short_pages": keep_short_pages}
    with workspace_scope(source.workspace_id), transaction.atomic():
        for name, value in changes.items():
            setattr(source, name, value)
        if schedule is not None or paused is not None:
            changes["next_sync_at"] = source.next_sync_at = _next_sync(source)
        if changes:
            Source.objects.filter(id=source.id).update(**changes)
        if "title" in changes:  # search answers show it (the search cache keeps their passages)
            semantic_cache.searches_changed(source.workspace_id)
    if keeps_more:
        with workspace_scope(source.workspace_id), transaction.atomic():
            _queue_skipped(source)
    if {"paused", "hidden_while_paused"} & set(changes):
        semantic_cache.invalidate(workspace_id=source.workspace_id, agent_id=source.agent_id)
    return source


def _next_sync(source: Source) -> Any:
    """A paused or unscheduled source has no next sync; otherwise one interval after the last (now, if
    that is past), so resuming a long-paused source syncs it at the next beat."""
    if source.paused:
        return None
    now = timezone.now()
    following = freshness.next_sync_after(source.schedule, source.last_synced_at or now)
    return max(following, now) if following else None


def sync_due_sources() -> list[Source]:
    """The beat task: claim the sources whose sync is due and queue each, spread over SYNC_JITTER_SECONDS
    so a thousand daily sources don't all start in the same second."""
    claimed = freshness.claim_due()
    for source in claimed:
        jitter = random.uniform(0, settings.SYNC_JITTER_SECONDS) if settings.SYNC_JITTER_SECONDS else None
        with workspace_scope(source.workspace_id), transaction.atomic():
            _queue(get_kind(source.kind).ingest_task, source, countdown=jitter)
    return claimed
