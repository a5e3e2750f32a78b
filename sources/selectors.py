"""Reads about workspaces and sources that several callers need (no requests, no HTTP errors here)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from sources.models import Chunk, Membership, Source
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


def agent_sources(*, workspace_id: int, agent_id: int) -> list[Source]:
    with workspace_scope(workspace_id):
        return list(Source.objects.filter(agent_id=agent_id).order_by("-created_at", "-id")[:500])
