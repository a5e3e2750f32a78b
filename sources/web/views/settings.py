"""The workspace's settings page: its name, the re-sync schedule new sources get, usage against its plan,
and the visitor-token secret. Everyone in the workspace sees it; owners and admins change the name and
schedule; only owners see or rotate the secret, because it lets its holder grant any audience."""

from __future__ import annotations

import structlog
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from agents.visitor import rotate_visitor_secret
from sources import access
from sources.models import Membership, Schedule, Workspace
from sources.usage import workspace_usage
from sources.web.decorators import forbidden
from sources.web.lookups import SignedInRequest, membership_or_404
from sources.web.views.common import layout

# Who saw or changed the secret, and when: operators find it in the logs (JSON lines with the request id).
audit = structlog.get_logger("grounded.audit")


def _page(
    request: SignedInRequest, membership: Membership, status: int = 200, **extra: object
) -> HttpResponse:
    workspace = Workspace.objects.get(id=membership.workspace_id)
    membership.workspace = workspace
    expires = workspace.previous_visitor_secret_expires_at
    in_grace = bool(workspace.previous_visitor_secret and expires and expires > timezone.now())
    context = layout(
        request,
        membership,
        page="settings",
        schedules=Schedule.choices,
        grace_until=expires if in_grace else None,
        usage=workspace_usage(workspace),
        **extra,
    )
    return render(request, "app/workspace_settings.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def workspace_settings(request: SignedInRequest) -> HttpResponse:
    actor = membership_or_404(request)
    if request.method == "GET":
        return _page(request, actor)
    try:
        access.workspace_update(
            actor=actor,
            name=request.POST.get("name", ""),
            default_schedule=request.POST.get("default_schedule", ""),
        )
    except access.AccessError as exc:
        if not actor.can_manage:
            return forbidden(request)
        return _page(request, actor, status=400, error=exc.message)
    messages.success(request, "Saved the workspace's settings.")
    return redirect("app-workspace-settings")


def _owner(request: SignedInRequest) -> Membership | None:
    actor = membership_or_404(request)
    return actor if actor.role == Membership.Role.OWNER else None


def _showing_secret(request: SignedInRequest, actor: Membership, secret: str) -> HttpResponse:
    # Rendered, not redirected, and not cached: the secret is shown on this one answer only.
    response = _page(request, actor, visitor_secret=secret)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def visitor_secret_reveal(request: SignedInRequest) -> HttpResponse:
    actor = _owner(request)
    if actor is None:
        return forbidden(request, "Only owners can see the workspace's visitor-token secret.")
    audit.info("visitor_secret_revealed", workspace_id=actor.workspace_id, user_id=request.user.pk)
    return _showing_secret(request, actor, actor.workspace.visitor_secret)


@login_required
@require_POST
def visitor_secret_rotate(request: SignedInRequest) -> HttpResponse:
    actor = _owner(request)
    if actor is None:
        return forbidden(request, "Only owners can rotate the workspace's visitor-token secret.")
    workspace = rotate_visitor_secret(workspace=actor.workspace)
    until = workspace.previous_visitor_secret_expires_at
    audit.info(
        "visitor_secret_rotated",
        workspace_id=actor.workspace_id,
        user_id=request.user.pk,
        grace_until=str(until),
    )
    messages.success(
        request,
        f"New visitor-token secret made. Tokens signed with the old one work until "
        f"{until:%Y-%m-%d %H:%M} UTC; give your site the new secret before then.",
    )
    return _showing_secret(request, actor, workspace.visitor_secret)
