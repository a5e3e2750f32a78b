"""Documents the customer pushes under their own ids: create or replace, delete, list, and plan a push.

The documents API (sources/api/documents.py), `manage.py ingest` and nothing else write here. An agent's
pushed documents live in its one source of the push kind (ingestion/kinds/push.py), made with the first
document and removed with the last. A document is stored at once and indexed on the index queue
(lifecycle.queue_index_jobs); what it would index to is fingerprinted, so pushing the same document
again stores nothing and embeds nothing. The last write wins: a version pushed while an older one is being
indexed releases that job's claim, so the older text is never stored over it and the new version's job
starts at once (a burst of PUTs of one id is a CI pipeline's normal case).

Every write locks the agent's row, then the push source's: pushes to one agent are serialised (no two
push sources, no two documents with one id), and a reindex of the source cannot start halfway through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet

from ingestion import lifecycle
from ingestion.kinds.config import KindError
from ingestion.kinds.push import PushKind
from ingestion.push.inputs import DocumentTooLarge, Prepared, prepare
from ingestion.status import source_refresh_status
from retrieval.vectors import delete_chunk_vectors
from sources import quotas
from sources.models import Chunk, Document, Source, Status, Workspace
from sources.tenancy import workspace_scope

__all__ = [
    "AgentNotFound",
    "DocumentTooLarge",
    "Outcome",
    "Plan",
    "Prepared",
    "delete_documents",
    "fingerprints",
    "plan",
    "prepare",
    "pushed_documents",
    "put_documents",
]


class AgentNotFound(Exception):
    """No agent of that id in the caller's workspace (another workspace's agent looks exactly the same)."""


@dataclass
class Outcome:
    """What happened to one pushed document: `created`, `updated`, `unchanged` or `invalid`."""

    external_id: str
    result: str
    document: Document | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)
    too_large: bool = False


# --- writing -------------------------------------------------------------------------------------------


# The agent's and the push source's rows are locked FOR NO KEY UPDATE: pushes to one agent still take
# turns, but a row that only references them (an index job storing a document of the source inserts its
# chunks, which takes FOR KEY SHARE on the source) is never made to wait. With FOR UPDATE, a push that
# held the source and waited for a document that an index job held, while that job waited for the
# source, deadlocked (a fresh-clone CI run, tests/ingestion/push/test_push_script.py).


def _lock_agent(agent_id: Any) -> Any:
    # The agents app sits above this layer: its model is reached through the source's foreign key.
    agent_model: Any = Source._meta.get_field("agent").related_model  # agents.models.Agent
    if not str(agent_id).isdigit():
        raise AgentNotFound(agent_id)
    agent = agent_model.objects.select_for_update(no_key=True).filter(id=int(agent_id)).first()
    if agent is None:
        raise AgentNotFound(agent_id)
    return agent


def _push_source(agent: Any, *, create: bool) -> Source | None:
    locked = Source.objects.select_for_update(no_key=True)
    source = locked.filter(agent=agent, kind=PushKind.name).order_by("id").first()
    if source is None and create:
        # Made indexing: its first document is queued with it (a pending source waits for a reindex task).
        source = Source.objects.create(
            agent=agent, kind=PushKind.name, title=PushKind.label, status=Status.INDEXING
        )
    return source


def put_documents(*, workspace: Workspace, agent_id: Any, items: Iterable[tuple[Any, Any]]) -> list[Outcome]:
    """Create or replace each (external_id, payload); every item is answered on its own, and bad items do
    not stop good ones. Changed documents are queued for indexing once the transaction commits.
    AgentNotFound when the agent is not the caller's."""
    outcomes: list[Outcome] = []
    ready: list[tuple[Outcome, Prepared]] = []
    seen: set[str] = set()
    for external_id, payload in items:
        outcome = Outcome(external_id=str(external_id or ""), result="invalid")
        outcomes.append(outcome)
        try:
            # The folder command prepares documents for its plan; they are not converted twice.
            if isinstance(payload, Prepared):
                prepared = payload
            else:
                prepared = prepare(external_id=external_id, payload=payload)
        except DocumentTooLarge as exc:
            outcome.errors, outcome.too_large = exc.errors, True
            continue
        except KindError as exc:
            outcome.errors = exc.errors
            continue
        if prepared.external_id in seen:
            outcome.errors = {"external_id": ["This id appears twice in the batch; send each document once."]}
            continue
        seen.add(prepared.external_id)
        ready.append((outcome, prepared))
    with workspace_scope(workspace.id), transaction.atomic():
        agent = _lock_agent(agent_id)
        if not ready:
            return outcomes
        if _push_source(agent, create=False) is None:
            quotas.check(workspace, "sources")  # the agent's push source is made with its first document
        source = _push_source(agent, create=True)
        assert source is not None
        # Locked in id order, as a delete of the source locks them (lifecycle.source_delete): no deadlock.
        batch = Document.objects.filter(source=source, external_id__in=[p.external_id for _, p in ready])
        existing = {d.external_id: d for d in batch.select_for_update().order_by("id")}
        # The plan, for the whole batch before anything is written (QuotaExceeded: 402 for the request).
        new = [p for _, p in ready if p.external_id not in existing]
        if new:
            quotas.check(workspace, "documents", len(new))
            quotas.check(workspace, "chunks", 1)
        growth = sum(
            len(p.text.encode()) - len(getattr(existing.get(p.external_id), "text", "").encode())
            for _, p in ready
        )
        if growth > 0:
            quotas.check(workspace, "stored_bytes", growth)
        changed: list[int] = []
        for outcome, prepared in ready:
            document = existing.get(prepared.external_id)
            if document is not None and document.content_hash == prepared.fingerprint:
                outcome.result, outcome.document = "unchanged", document
                if document.status == Status.FAILED:
                    changed.append(document.id)  # the same content, tried again
                    _set_pending(document)
                continue
            if document is None:
                document = Document(source=source, external_id=prepared.external_id)
                outcome.result = "created"
            else:
                outcome.result = "updated"
            document.title, document.text, document.url = prepared.title, prepared.text, prepared.url
            document.metadata, document.content_hash = prepared.metadata, prepared.fingerprint
            document.status, document.error, document.error_detail = Status.PENDING, "", ""
            # The last write wins: a job still indexing an older version is released (it stores nothing,
            # ingestion/jobs/claims.py), and this version's job claims the document at once. A hold left on
            # the row would keep both from it until the hold passed and a sweep came (150-180 s).
            document.due_by = None
            document.save()
            outcome.document = document
            changed.append(document.id)
        _settle(source, changed)
    return outcomes


def _set_pending(document: Document) -> None:
    Document.objects.filter(id=document.id).update(
        status=Status.PENDING, error="", error_detail="", due_by=None
    )
    document.status, document.error = Status.PENDING, ""


def _settle(source: Source, changed: list[int]) -> None:
    """Queue the changed documents and derive the source's status. A pending source waits for its reindex
    task, which indexes every pending document, these included: they are not queued twice, and its status
    is left for that task to claim."""
    if source.status == Status.PENDING:
        return
    lifecycle.queue_index_jobs(workspace_id=source.workspace_id, document_ids=changed)
    source_refresh_status(source_id=source.id)


def delete_documents(*, workspace: Workspace, agent_id: Any, external_ids: Iterable[str]) -> list[str]:
    """Remove these documents with their chunks (through the store first, so no vector outlives its row).
    Returns the ids that existed. The push source goes with its last document."""
    wanted = list(dict.fromkeys(external_ids))
    with workspace_scope(workspace.id), transaction.atomic():
        agent = _lock_agent(agent_id)
        source = _push_source(agent, create=False)
        if source is None or not wanted:
            return []
        documents = list(
            Document.objects.filter(source=source, external_id__in=wanted).select_for_update().order_by("id")
        )
        if not documents:
            return []
        document_ids = [d.id for d in documents]
        chunks = Chunk.objects.filter(document_id__in=document_ids)
        chunk_ids = [str(i) for i in chunks.values_list("id", flat=True)]
        delete_chunk_vectors(workspace_id=workspace.id, chunk_ids=chunk_ids)
        chunks.delete()
        Document.objects.filter(id__in=document_ids).delete()
        if not Document.objects.filter(source=source).exists():
            lifecycle.source_delete(source=source)
        else:
            _settle(source, [])
        return [d.external_id for d in documents]


# --- reading -------------------------------------------------------------------------------------------


def pushed_documents(
    *, workspace: Workspace, agent_id: Any, metadata: dict[str, Any] | None = None, status: str = ""
) -> QuerySet[Document]:
    """The agent's pushed documents by external id, filtered by metadata with search's semantics (a value
    matches the key's value or one element of its list). Run it inside the workspace's scope."""
    with workspace_scope(workspace.id):
        agent_model: Any = Source._meta.get_field("agent").related_model  # agents.models.Agent
        if not str(agent_id).isdigit() or not agent_model.objects.filter(id=int(agent_id)).exists():
            raise AgentNotFound(agent_id)
        documents = Document.objects.filter(source__agent_id=int(agent_id), source__kind=PushKind.name)
        for key, value in (metadata or {}).items():
            accepted = value if isinstance(value, list) else [value]
            match = Q()
            for item in accepted:
                match |= Q(metadata__contains={key: item}) | Q(metadata__contains={key: [item]})
            documents = documents.filter(match) if accepted else documents.none()
        if status:
            documents = documents.filter(status=status)
        return documents.order_by("external_id")


def fingerprints(*, workspace: Workspace, agent_id: Any) -> dict[str, str]:
    """external id -> fingerprint of every pushed document of the agent."""
    documents = pushed_documents(workspace=workspace, agent_id=agent_id)
    with workspace_scope(workspace.id):
        return dict(documents.values_list("external_id", "content_hash"))


@dataclass(frozen=True)
class Plan:
    """What a push would do, written nowhere: ids to create, change, leave, and (with prune) remove."""

    create: list[Prepared]
    change: list[Prepared]
    unchanged: list[Prepared]
    remove: list[str]


def plan(
    *, workspace: Workspace, agent_id: Any, documents: list[Prepared], keep: set[str] | None = None
) -> Plan:
    """With `keep` (the ids still present, readable or not), every other pushed document is to remove."""
    known = fingerprints(workspace=workspace, agent_id=agent_id)
    return Plan(
        create=[d for d in documents if d.external_id not in known],
        change=[d for d in documents if d.external_id in known and known[d.external_id] != d.fingerprint],
        unchanged=[d for d in documents if known.get(d.external_id) == d.fingerprint],
        remove=sorted(set(known) - keep) if keep is not None else [],
    )
