"""The admin's web UI (server-rendered)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from agents.models import Agent
from sources.models import Source
from sources.selectors import current_membership, memberships_of
from sources.tenancy import workspace_scope


@login_required
def app_home(request: HttpRequest) -> HttpResponse:
    membership = current_membership(request)
    if membership is None:
        return render(request, "app/no_workspace.html", status=403)
    with workspace_scope(membership.workspace_id):
        agents = list(Agent.objects.order_by("name"))
        sources = list(Source.objects.select_related("agent").order_by("-created_at")[:200])
    return render(
        request,
        "app/home.html",
        {
            "membership": membership,
            "memberships": memberships_of(request.user),
            "agents": agents,
            "sources": sources,
        },
    )
