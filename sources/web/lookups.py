"""The rows a page is about, looked up for the signed-in person: another workspace's agent or source is a
404, like a missing one. (Selectors stay free of requests and HTTP errors; this is where they meet.)"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, User
from django.http import Http404, HttpRequest

from agents.models import Agent
from sources.models import Membership, Source
from sources.selectors import membership_in, memberships_of


class SignedInRequest(HttpRequest):
    """The request a view behind login_required gets, as mypy sees it: its user is a User, never
    AnonymousUser. Django hands the view an ordinary HttpRequest; this class only narrows the type."""

    user: User


def current_membership(request: SignedInRequest) -> Membership | None:
    memberships = memberships_of(request.user)
    chosen = request.session.get("workspace_id")
    for membership in memberships:
        if membership.workspace_id == chosen:
            return membership
    return memberships[0] if memberships else None


def membership_or_404(request: SignedInRequest) -> Membership:
    """The signed-in person's membership of the chosen workspace; someone in no workspace gets a 404."""
    membership = current_membership(request)
    if membership is None:
        raise Http404
    return membership


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
