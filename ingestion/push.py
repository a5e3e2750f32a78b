"""Documents the customer pushes under their own ids: create or replace, delete, list, and plan a push.

The documents API (sources/api/documents.py), `manage.py ingest` and nothing else write here. An agent's
pushed documents live in its one source of the push kind (ingestion/kinds/push.py), made with the first
document and removed with the last. A document is stored at once and indexed on the index queue
(lifecycle.queue_document_index); what it would index to is fingerprinted, so pushing the same document
again stores nothing and embeds nothing.

Every write locks the agent's row, then the push source's: pushes to one agent are serialised (no two
push sources, no two documents with one id), and a reindex of the source cannot start halfway through.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ingestion import lifecycle
from ingestion.indexing import source_refresh_status
from ingestion.kinds.base import KindError
from ingestion.kinds.push import PushKind
from retrieval.services import delete_chunk_vectors
from retrieval.stores.base import FILTER_KEY
from sources.models import Chunk, Document, Source, Status, Workspace
from sources.tenancy import workspace_scope

# Keys every chunk's metadata gets from us (ingestion.indexing._build_chunks): a document may not set them.
RESERVED_METADATA = frozenset(
    {"agent_id", "document_id", "chunk_id", "url", "workspace_id", "source_id", "lang", "audience"}
)
MAX_METADATA_KEYS = 50
MAX_METADATA_VALUE_CHARS = 500
MAX_LIST_ITEMS = 100
MAX_AUDIENCES = 50
MAX_EXTERNAL_ID_CHARS = 500
# HTML carries its markup: the raw page may be this many times the text limit; its text must fit the limit.
HTML_MARKUP_ALLOWANCE = 4
CONTENT_FIELDS = ("text", "markdown", "html")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class AgentNotFound(Exception):
    """No agent of that id in the caller's workspace (another workspace's agent looks exactly the same)."""


class DocumentTooLarge(Exception):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.errors = {field_name: [message]}


MetadataValue = str | int | float | bool | list[str | int | float | bool]


class PushedDocument(BaseModel):
    """One document as a caller sends it: a title, its content as text, Markdown or HTML, and optionally
    the page to cite, metadata to filter on and the audiences that may retrieve it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    title: str = ""
    text: str | None = None
    markdown: str | None = None
    html: str | None = None
    url: str = ""
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    audiences: list[str] | None = None

    @field_validator("title")
    @classmethod
    def title_fits(cls, value: str) -> str:
        if len(value.strip()) > 500:
            raise ValueError("A title is at most 500 characters.")
        return value.strip()

    @field_validator("url")
    @classmethod
    def web_address(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or len(value) > 2000:
            raise ValueError("The link must be an http(s) address of at most 2,000 characters.")
        return value

    @field_validator("metadata")
    @classmethod
    def filterable(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_METADATA_KEYS:
            raise ValueError(f"At most {MAX_METADATA_KEYS} metadata keys.")
        for key, item in value.items():
            if not FILTER_KEY.match(key):
                raise ValueError(
                    f"{key!r}: a key is letters, digits and underscores, not starting with a digit."
                )
            if key in RESERVED_METADATA:
                raise ValueError(
                    f"{key!r} is set by Grounded; use another key (audiences go in `audiences`)."
                )
            items = item if isinstance(item, list) else [item]
            if len(items) > MAX_LIST_ITEMS:
                raise ValueError(f"{key!r}: at most {MAX_LIST_ITEMS} values.")
            if any(isinstance(v, str) and len(v) > MAX_METADATA_VALUE_CHARS for v in items):
                raise ValueError(f"{key!r}: values are at most {MAX_METADATA_VALUE_CHARS} characters.")
        return value

    @field_validator("audiences")
    @classmethod
    def some_audience(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        cleaned = list(dict.fromkeys(a.strip() for a in value))
        if not cleaned or any(not a or len(a) > 100 for a in cleaned) or len(cleaned) > MAX_AUDIENCES:
            raise ValueError(
                f"Give 1 to {MAX_AUDIENCES} audiences of 1 to 100 characters, or leave it out for public."
            )
        return cleaned

    @model_validator(mode="after")
    def one_content(self) -> PushedDocument:
        given = [name for name in CONTENT_FIELDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("Send the content in exactly one of `text`, `markdown` or `html`.")
        return self


@dataclass(frozen=True)
class Prepared:
    """A validated document, converted to the text we index, with the fingerprint of what it indexes to."""

    external_id: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any]  # what goes into its chunks' metadata, audience included
    fingerprint: str


@dataclass
class Outcome:
    """What happened to one pushed document: `created`, `updated`, `unchanged` or `invalid`."""

    external_id: str
    result: str
    document: Document | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)
    too_large: bool = False


# --- validating ----------------------------------------------------------------------------------------


def check_external_id(external_id: Any) -> str:
    if not isinstance(external_id, str) or not external_id:
        raise KindError({"external_id": ["Give each document an id of your own (a string)."]})
    if len(external_id) > MAX_EXTERNAL_ID_CHARS:
        raise KindError({"external_id": [f"An id is at most {MAX_EXTERNAL_ID_CHARS} characters."]})
    if external_id != external_id.strip() or _CONTROL.search(external_id):
        raise KindError({"external_id": ["An id has no spaces at either end and no control characters."]})
    return external_id


def prepare(*, external_id: str, payload: Any) -> Prepared:
    """Validate one document and convert it to text. KindError (400) for what to correct, DocumentTooLarge
    (413) for content over TEXT_SOURCE_MAX_CHARS."""
    if not isinstance(payload, dict):
        raise KindError({"non_field_errors": ["A document is a JSON object."]})
    check_external_id(external_id)
    limit = settings.TEXT_SOURCE_MAX_CHARS
    # Checked before validation, so a huge body is refused by its size, not parsed.
    for name in CONTENT_FIELDS:
        raw = payload.get(name)
        allowed = limit * HTML_MARKUP_ALLOWANCE if name == "html" else limit
        if isinstance(raw, str) and len(raw) > allowed:
            raise DocumentTooLarge(name, f"This {name} is {len(raw):,} characters; the limit is {allowed:,}.")
    try:
        document = PushedDocument.model_validate(payload)
    except ValidationError as exc:
        raise KindError(_field_errors(exc)) from exc
    content_field = next(name for name in CONTENT_FIELDS if getattr(document, name) is not None)
    if content_field == "html":
        found_title, text = html_to_text(document.html or "")
    else:
        text = getattr(document, content_field)
        found_title = markdown_title(text) if content_field == "markdown" else ""
    if len(text) > limit:
        message = f"Its text is {len(text):,} characters; the limit is {limit:,}."
        raise DocumentTooLarge(content_field, message)
    if not text.strip():
        raise KindError({content_field: ["This document has no text to index."]})
    title = (document.title or found_title or external_id.rsplit("/", 1)[-1])[:500]
    metadata = {**document.metadata, "audience": document.audiences or ["public"]}
    return Prepared(
        external_id=external_id,
        title=title,
        text=text,
        url=document.url,
        metadata=metadata,
        fingerprint=fingerprint(title=title, text=text, url=document.url, metadata=metadata),
    )


def fingerprint(*, title: str, text: str, url: str, metadata: dict[str, Any]) -> str:
    """Everything a document's chunks are made of: the title is embedded with each chunk, the link and
    metadata are stored with it. The same fingerprint means nothing to store and nothing to embed."""
    body = json.dumps({"title": title, "text": text, "url": url, "metadata": metadata}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _field_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        location = [str(p) for p in error["loc"]]
        # A type error inside `metadata` names the value's position; the key is what people need.
        name = ".".join(location[:2]) if location else "non_field_errors"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "Unknown field."
        errors.setdefault(name or "non_field_errors", []).append(message)
    return errors


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document. trafilatura, as the crawler and the HTML parser use it, keeps the
    main content as Markdown; the crawler's page checks (not-found pages, bot walls) are for pages we fetch,
    not for what a customer sends, so they are not applied. All visible text when trafilatura finds none."""
    import lxml.html
    import trafilatura
    from lxml_html_clean import Cleaner

    text = trafilatura.extract(
        html,
        output_format="markdown",
        include_tables=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        favor_recall=True,
    )
    metadata = trafilatura.extract_metadata(html)
    title = (metadata.title or "").strip() if metadata is not None else ""
    if not text or not text.strip():
        try:
            tree = Cleaner(scripts=True, javascript=True, style=True, comments=True).clean_html(
                lxml.html.document_fromstring(html)
            )
            text = re.sub(r"\n{3,}", "\n\n", tree.text_content()).strip()
        except (ValueError, lxml.etree.ParserError):
            text = ""
    return title, text or ""


def markdown_title(text: str) -> str:
    heading = _MARKDOWN_HEADING.search(text[:5000])
    return heading.group(1).strip() if heading else ""


# --- writing -------------------------------------------------------------------------------------------


def _lock_agent(agent_id: Any) -> Any:
    # The agents app sits above this layer: its model is reached through the source's foreign key.
    agent_model = Source._meta.get_field("agent").related_model
    if not str(agent_id).isdigit():
        raise AgentNotFound(agent_id)
    agent = agent_model.objects.select_for_update().filter(id=int(agent_id)).first()
    if agent is None:
        raise AgentNotFound(agent_id)
    return agent


def _push_source(agent: Any, *, create: bool) -> Source | None:
    source = Source.objects.select_for_update().filter(agent=agent, kind=PushKind.name).order_by("id").first()
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
        source = _push_source(agent, create=True)
        assert source is not None
        existing = {
            d.external_id: d
            for d in Document.objects.filter(
                source=source, external_id__in=[p.external_id for _, p in ready]
            ).select_for_update()
        }
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
            document.save()
            outcome.document = document
            changed.append(document.id)
        _settle(source, changed)
    return outcomes


def _set_pending(document: Document) -> None:
    Document.objects.filter(id=document.id).update(status=Status.PENDING, error="", error_detail="")
    document.status, document.error = Status.PENDING, ""


def _settle(source: Source, changed: list[int]) -> None:
    """Queue the changed documents and derive the source's status. A pending source waits for its reindex
    task, which indexes every pending document, these included: they are not queued twice, and its status
    is left for that task to claim."""
    if source.status == Status.PENDING:
        return
    lifecycle.queue_document_index(workspace_id=source.workspace_id, document_ids=changed)
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
        documents = list(Document.objects.filter(source=source, external_id__in=wanted).select_for_update())
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
        agent_model = Source._meta.get_field("agent").related_model
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
