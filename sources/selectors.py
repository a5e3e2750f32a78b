"""Reads about sources that several views need."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest

from agents.models import Agent
from sources.models import Chunk, Membership, Source
from sources.tenancy import workspace_scope


def memberships_of(user: AbstractBaseUser) -> list[Membership]:
    # A person's memberships span workspaces by nature: this is the workspace switcher's list.
    return list(Membership.unscoped.select_related("workspace").filter(user=user).order_by("workspace__name"))


def current_membership(request: HttpRequest) -> Membership | None:
    memberships = memberships_of(request.user)
    chosen = request.session.get("workspace_id")
    for membership in memberships:
        if membership.workspace_id == chosen:
            return membership
    return memberships[0] if memberships else None


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


def agent_for(user: AbstractBaseUser, agent_id: int) -> tuple[Agent, Membership]:
    """The agent and the user's membership of its workspace; another workspace's agent is a 404."""
    agent = Agent.unscoped.select_related("workspace").filter(id=agent_id).first()
    membership = membership_in(user, agent.workspace_id) if agent else None
    if agent is None or membership is None:
        raise Http404("No such agent.")
    return agent, membership


def source_for(user: AbstractBaseUser, source_id: int) -> tuple[Source, Membership]:
    source = Source.unscoped.select_related("agent", "workspace").filter(id=source_id).first()
    membership = membership_in(user, source.workspace_id) if source else None
    if source is None or membership is None:
        raise Http404("No such source.")
    return source, membership


def agent_sources(agent: Agent) -> list[Source]:
    with workspace_scope(agent.workspace_id):
        return list(Source.objects.filter(agent_id=agent.id).order_by("-created_at", "-id")[:500])
