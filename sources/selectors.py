"""Reads about workspaces and sources that several callers need (no requests, no HTTP errors here)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce, Lower

from sources.models import ACTIVE_STATUSES, Chunk, Membership, Source, Status
from sources.tenancy import workspace_scope


def memberships_of(user: AbstractBaseUser) -> list[Membership]:
    # A person's memberships span workspaces by nature: this is the workspace switcher's list.
    return list(Membership.unscoped.select_related("workspace").filter(user=user).order_by("workspace__name"))


def source_preview(*, source: Source, documents: int = 20, chunks: int = 10) -> dict:
    """What a source turned into: its documents (with an excerpt) and a sample of its chunks."""
    docs = list(source.documents.order_by("id")[:documents])
    sample = list(Chunk.objects.filter(source_id=source.id).order_by("document_id", "position")[:chunks])
    return {
        "source": {"id": source.id, "title": source.title, "kind": source.kind, "status": source.status},
        "documents_total": source.documents.count(),
        "chunks_total": Chunk.objects.filter(source_id=source.id).count(),
        "documents": [
            {
                "id": d.id,
                "title": d.title,
                "url": d.url or None,
                "status": d.status,
                "error": d.error,
                "language": d.language,
                "chars": len(d.text),
                "excerpt": d.text[:1000],
            }
            for d in docs
        ],
        "chunks": [
            {"id": str(c.id), "document_id": c.document_id, "position": c.position, "text": c.text}
            for c in sample
        ],
    }


def membership_in(user: AbstractBaseUser, workspace_id: int) -> Membership | None:
    memberships = Membership.unscoped.select_related("workspace")
    return memberships.filter(user=user, workspace_id=workspace_id).first()


# The sources list's orders, by the name the page's "Sort" menu sends.
SOURCE_SORTS: dict[str, tuple] = {
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
    "title": (Lower("title"), "id"),
    "updated": ("-updated_at", "-id"),
    "chunks": ("-chunks_count", "-id"),
}
# "active" groups every in-flight status, as the page's "In progress" card does.
STATUS_FILTERS: dict[str, Q] = {
    "active": Q(status__in=ACTIVE_STATUSES),
    "done": Q(status=Status.DONE),
    "failed": Q(status=Status.FAILED),
}
SOURCES_PER_PAGE = 50


@dataclass(frozen=True)
class SourcePage:
    sources: list[Source]
    matched: int  # sources matching the search and filters, on every page
    page: int
    pages: int
    per_page: int


def agent_sources(
    *,
    workspace_id: int,
    agent_id: int,
    q: str = "",
    kind: str = "",
    status: str = "",
    sort: str = "newest",
    page: int = 1,
    per_page: int = SOURCES_PER_PAGE,
) -> SourcePage:
    """One page of an agent's sources, searched (title or address), filtered and sorted. Unknown filter
    or sort values are ignored rather than refused: they come from a URL a person may have edited."""
    with workspace_scope(workspace_id):
        sources = Source.objects.filter(agent_id=agent_id)
        if q.strip():
            term = q.strip()
            sources = sources.filter(Q(title__icontains=term) | Q(config__url__icontains=term))
        if kind:
            sources = sources.filter(kind=kind)
        if status in STATUS_FILTERS:
            sources = sources.filter(STATUS_FILTERS[status])
        matched = sources.count()
        pages = max(1, -(-matched // per_page))
        page = min(max(1, page), pages)
        ordered = sources.order_by(*SOURCE_SORTS.get(sort, SOURCE_SORTS["newest"]))
        rows = list(ordered[(page - 1) * per_page : page * per_page])
    return SourcePage(sources=rows, matched=matched, page=page, pages=pages, per_page=per_page)


def agent_source_counts(*, workspace_id: int, agent_id: int) -> dict[str, int]:
    """The agent's cards (every source, whatever the list shows): one query, however many sources."""
    with workspace_scope(workspace_id):
        counts = Source.objects.filter(agent_id=agent_id).aggregate(
            total=Count("id"),
            active=Count("id", filter=STATUS_FILTERS["active"]),
            done=Count("id", filter=STATUS_FILTERS["done"]),
            failed=Count("id", filter=STATUS_FILTERS["failed"]),
            chunks=Coalesce(Sum("chunks_count"), 0),
        )
    return counts


def agent_source_kinds(*, workspace_id: int, agent_id: int) -> list[str]:
    """The kinds this agent has sources of, for the kind filter."""
    with workspace_scope(workspace_id):
        return sorted(set(Source.objects.filter(agent_id=agent_id).values_list("kind", flat=True)))
