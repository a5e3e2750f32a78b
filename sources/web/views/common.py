"""What the admin UI's views share: reading a body, the page frame, JSON errors, the redirect back to an
agent's sources."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect

from agents.models import Agent
from sources.models import Membership, Source
from sources.quotas import QuotaExceeded
from sources.selectors import memberships_of
from sources.tenancy import workspace_scope
from sources.web import presenters
from sources.web.lookups import SignedInRequest


def errors_response(errors: dict, status: int = 400) -> JsonResponse:
    return JsonResponse(errors, status=status)


def quota_refused(exc: QuotaExceeded) -> JsonResponse:
    """A plan's refusal for the app's scripts: the message under `__all__`, which the dialogs show next to
    their submit button; app.js also raises a banner for a 402. (The API's answer carries the figures.)"""
    return JsonResponse({"__all__": [exc.message]}, status=exc.status)


def body_of(request: HttpRequest) -> dict[str, Any]:
    if request.content_type == "application/json":
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
    return request.POST.dict()


def layout(request: SignedInRequest, membership: Membership, **extra: Any) -> dict[str, Any]:
    """What every page of the app shows around its content: the workspace switcher and the agents."""
    with workspace_scope(membership.workspace_id):
        agents = list(Agent.objects.order_by("name", "id").only("id", "name"))
    return {
        "membership": membership,
        "memberships": memberships_of(request.user),
        "nav_agents": agents,
        "can_manage": membership.can_manage,
        **extra,
    }


def back_to_sources(source: Source) -> HttpResponse:
    return redirect("app-agent-sources", agent_id=source.agent_id)


def source_layout(
    request: SignedInRequest, membership: Membership, source: Source, **extra: Any
) -> dict[str, Any]:
    """The frame of a page about one source: its agent's sources tab, with the source's row on top."""
    return layout(
        request, membership, agent=source.agent, tab="sources", row=presenters.source_row(source), **extra
    )
