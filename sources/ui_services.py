"""Reads and writes the web UI needs that the app services do not offer yet.

Each function calls the existing services and selectors; nothing here talks to a store or a queue on its
own. Where a function belongs once the UI settles is said in its docstring ("belongs in ...").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.utils import timezone
from django.utils.timesince import timesince

from agents.models import Agent
from sources.kinds import CRAWLED_KINDS, KindError
from sources.models import ACTIVE_STATUSES, Source, Status, Workspace
from sources.tenancy import workspace_scope

KIND_LABELS = {
    "text": "Text",
    "url": "Web page",
    "sitemap": "Website",
    "feed": "Feed",
    "upload": "File",
    "auto": "Visited page",
}
# What the "Add source" dialog offers, in order. Notion and Google Docs are not built, so not offered.
ADDABLE_KINDS = [
    ("url", "Web page"),
    ("sitemap", "Website"),
    ("feed", "Feed"),
    ("text", "Text"),
    ("upload", "Files"),
]
STATUS_LABELS = {
    Status.PENDING: "Queued",
    Status.CRAWLING: "Crawling",
    Status.INDEXING: "Indexing",
    Status.DONE: "Done",
    Status.FAILED: "Failed",
}


# --- sources as the UI shows them ---------------------------------------------------------------------


def source_row(source: Source) -> dict[str, Any]:
    """Everything a row of the sources table shows, for the template and the live refresh alike."""
    config = source.config or {}
    # Ingestion writes progress with queryset updates, which leave auto_now's updated_at alone; the time
    # indexing finished is the better "last update" then.
    updated_at = max(filter(None, [source.updated_at, source.indexed_at]))
    return {
        "id": source.id,
        "kind": source.kind,
        "kind_label": KIND_LABELS.get(source.kind, source.kind.title()),
        "title": source.title,
        "address": config.get("url", ""),
        "filename": config.get("filename", ""),
        "status": source.status,
        "status_label": STATUS_LABELS.get(source.status, source.status.title()),
        "active": source.status in ACTIVE_STATUSES,
        "error": source.error,
        "error_detail": source.error_detail,
        "notice": source.notice,
        "pages_total": source.pages_total,
        "pages_done": source.pages_done,
        "pages_failed": source.pages_failed,
        "pages_left": source.pages_left,
        "chunks_count": source.chunks_count,
        "updated_at": updated_at,
        "updated_ago": _ago(updated_at),
        "recrawlable": source.kind in CRAWLED_KINDS,
        "reupload_needed": bool(config.get("reupload_needed")),
        # Changes whenever anything the row shows changes, so the live refresh only redraws those rows.
        "version": _digest(
            (
                source.status,
                source.pages_total,
                source.pages_done,
                source.pages_failed,
                source.chunks_count,
                updated_at.isoformat(),
                source.error,
                source.notice,
                source.title,
                config.get("reupload_needed"),
            )
        ),
    }


def _ago(moment: Any) -> str:
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return timesince(moment, timezone.now()).split(",")[0] + " ago"


def _digest(values: Any) -> str:
    return hashlib.sha1("\x1f".join(str(v) for v in values).encode(), usedforsecurity=False).hexdigest()[:16]


def status_counts(sources: list[Source]) -> dict[str, int]:
    counts = {"total": len(sources), "active": 0, "done": 0, "failed": 0, "chunks": 0}
    for source in sources:
        if source.status in ACTIVE_STATUSES:
            counts["active"] += 1
        elif source.status == Status.DONE:
            counts["done"] += 1
        elif source.status == Status.FAILED:
            counts["failed"] += 1
        counts["chunks"] += source.chunks_count
    return counts


def agents_overview(workspace_id: int) -> list[dict[str, Any]]:
    """Each agent of a workspace with the counts of its sources. Belongs in agents/selectors.py."""
    with workspace_scope(workspace_id):
        agents = list(Agent.objects.order_by("name", "id"))
        sources = list(Source.objects.only("agent_id", "status", "chunks_count"))
    by_agent: dict[int, list[Source]] = {}
    for source in sources:
        by_agent.setdefault(source.agent_id, []).append(source)
    return [{"agent": agent, "counts": status_counts(by_agent.get(agent.id, []))} for agent in agents]


def source_add(
    *, workspace: Workspace, agent: Agent, form: dict[str, Any], files: list, content_length: int
) -> list[Source]:
    """What the "Add source" dialog submits: one form carrying every kind's inputs, of which the chosen
    kind's are used. Raises KindError (field -> messages) or UploadTooLarge, like the services it calls.
    """
    from sources.services import UploadTooLarge, source_create, upload_create

    kind = str(form.get("kind", ""))
    title = str(form.get("title", ""))
    if kind not in dict(ADDABLE_KINDS):
        raise KindError({"kind": ["Choose what to add: a web page, a website, a feed, text or files."]})
    if kind == "upload":
        ceiling = settings.UPLOAD_MAX_FILE_BYTES * settings.UPLOAD_MAX_FILES_PER_REQUEST + 1_000_000
        if content_length > ceiling:  # refused before anything is stored
            raise UploadTooLarge("The upload is larger than we accept.")
        return upload_create(workspace=workspace, agent_id=agent.id, files=files, title=title)
    if kind == "text":
        payload: dict[str, Any] = {"content": str(form.get("content", ""))}
    else:
        payload = {"url": str(form.get("url", ""))}
        max_pages = str(form.get("max_pages", "") or "").strip()
        if kind == "sitemap" and max_pages:
            payload["max_pages"] = max_pages
    return [source_create(workspace=workspace, agent_id=agent.id, kind=kind, title=title, payload=payload)]


def source_preview_titled(source: Source) -> dict[str, Any]:
    """source_preview, with each sampled chunk naming its document."""
    from sources.selectors import source_preview

    with workspace_scope(source.workspace_id):
        preview = source_preview(source=source)
    titles = {d["id"]: d["title"] for d in preview["documents"]}
    for chunk in preview["chunks"]:
        chunk["document_title"] = titles.get(chunk["document_id"]) or f"Document {chunk['document_id']}"
    return preview


def url_sources_create(*, workspace: Workspace, agent: Agent, pages: list[dict]) -> tuple[list[Source], dict]:
    """One url source per picked page; pages that fail validation are reported by address, the others
    are still added. Belongs in sources/services.py."""
    from sources.services import source_create

    created: list[Source] = []
    errors: dict[str, list[str]] = {}
    for page in pages[: settings.CRAWL_MAX_PAGES_PER_SOURCE]:
        url = str(page.get("url") or "").strip()
        title = str(page.get("title") or "").strip()[:300]
        try:
            created.append(
                source_create(
                    workspace=workspace, agent_id=agent.id, kind="url", title=title, payload={"url": url}
                )
            )
        except KindError as exc:
            errors[url or "url"] = [m for messages in exc.errors.values() for m in messages]
    return created, errors


def discover_pages(domain: str) -> list[dict[str, Any]]:
    """The pages found on a domain, for the "Discover" list; a fetch problem becomes a field error."""
    from ingestion.crawl.discover import discover
    from ingestion.crawl.errors import FetchError
    from ingestion.crawling import fetch_policy

    domain = domain.strip()
    if not domain:
        raise KindError({"domain": ["Type a domain, like example.com."]})
    if len(domain) > 300:
        raise KindError({"domain": ["A domain is at most 300 characters."]})
    try:
        pages = discover(domain, fetch_policy())
    except FetchError as exc:
        raise KindError({"domain": [exc.message]}) from exc
    return [{"url": p.url, "title": p.title or "", "found_by": p.found_by} for p in pages]


def upload_replace(*, source: Source, upload: UploadedFile) -> None:
    """Store a new original for an upload source whose stored text is gone, then index it again."""
    from ingestion.services import source_reindex
    from ingestion.uploads import delete_files, store_original
    from sources.services import check_upload_size, upload_filename

    if source.kind != "upload":
        raise KindError({"file": ["Only file sources can be uploaded again."]})
    if source.status in ACTIVE_STATUSES:
        raise KindError({"file": ["This file is being processed; wait until it has finished."]})
    check_upload_size(upload)
    with workspace_scope(source.workspace_id):
        delete_files(source.workspace_id, source.id)  # stale segments must not be read back
        source.config = {"filename": upload_filename(upload), "size": upload.size}
        path, digest = store_original(source, upload)
        source.config.update(storage_path=path, sha256=digest)
        Source.objects.filter(id=source.id).update(config=source.config, error="", error_detail="")
        source_reindex(source=source)


# --- testing retrieval -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalTest:
    query: str
    passages: list
    gate_enabled: bool
    backed: bool
    mode: str
    error: str = ""
    error_detail: str = ""

    @property
    def hits(self) -> list[dict[str, Any]]:
        """The passages as the page shows them; bars are clamped, since a cosine can be below zero."""

        def pct(value: float | None) -> int:
            return round(min(max(value or 0.0, 0.0), 1.0) * 100)

        return [
            {
                "title": p.document_title or p.source_title,
                "source_title": p.source_title,
                "url": p.url if p.source_kind in CRAWLED_KINDS else "",
                "text": p.text,
                "score": p.score,
                "vector": p.vector_score or 0.0,
                "keyword": p.keyword_score or 0.0,
                "score_pct": pct(p.score),
                "vector_pct": pct(p.vector_score),
                "keyword_pct": pct(p.keyword_score),
            }
            for p in self.passages
        ]


def retrieval_test(*, agent: Agent, query: str) -> RetrievalTest:
    """The passages the agent would get for a question from a public visitor, and whether the scope gate
    would let the question through (the chat's own search settings, from agents.services)."""
    from agents.gate import is_backed
    from agents.services import agent_search_params
    from retrieval.services import search_passages

    params = agent_search_params(agent, audiences=[])
    mode = params.mode
    try:
        passages = search_passages(
            workspace_id=agent.workspace_id, query=query, params=params, agent_id=agent.id
        )
    except Exception as exc:  # the store is down: say so instead of a server error
        return RetrievalTest(
            query,
            [],
            agent.gate_enabled,
            False,
            mode,
            "The knowledge base can't be searched right now; try again in a minute.",
            repr(exc)[:500],
        )
    return RetrievalTest(query, passages, agent.gate_enabled, is_backed(agent, [passages]), mode)


# --- agents ------------------------------------------------------------------------------------------


def widget_snippet(*, host: str, agent: Agent) -> str:
    return f'<script src="{host}/static/agents/widget.js" data-agent="{agent.public_key}" defer></script>'
