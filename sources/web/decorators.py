"""What every view of the admin's UI checks first: who is signed in, which agent or source the page is about
(another workspace's is a 404), and, for changes, that the person may make them. Every view that changes
something is wrapped in @manager_required, so a hidden button is never the only guard."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from sources.web.lookups import SignedInRequest, agent_for, source_for

FORBIDDEN = "Only owners and admins of this workspace can change its agents and sources."

View = Callable[..., HttpResponse]


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def forbidden(request: HttpRequest, message: str = FORBIDDEN) -> HttpResponse:
    if wants_json(request):
        return JsonResponse({"detail": message}, status=403)
    return render(request, "403.html", {"message": message}, status=403)


def for_agent(view: View) -> View:
    """view(request, agent, membership, ...) for the URL's agent_id."""

    @login_required
    @wraps(view)
    def wrapped(request: SignedInRequest, agent_id: int, **kwargs: Any) -> HttpResponse:
        agent, membership = agent_for(request.user, agent_id)
        # An agent's page makes its workspace the current one (the user belongs to it).
        if request.session.get("workspace_id") != agent.workspace_id:
            request.session["workspace_id"] = agent.workspace_id
        return view(request, agent, membership, **kwargs)

    return wrapped


def for_source(view: View) -> View:
    """view(request, source, membership, ...) for the URL's source_id."""

    @login_required
    @wraps(view)
    def wrapped(request: SignedInRequest, source_id: int, **kwargs: Any) -> HttpResponse:
        source, membership = source_for(request.user, source_id)
        return view(request, source, membership, **kwargs)

    return wrapped


def manager_required(view: View) -> View:
    """Under @for_agent or @for_source: only owners and admins get past; members get a 403."""

    @wraps(view)
    def wrapped(request: HttpRequest, subject: Any, membership: Any, **kwargs: Any) -> HttpResponse:
        if not membership.can_manage:
            return forbidden(request)
        return view(request, subject, membership, **kwargs)

    return wrapped
