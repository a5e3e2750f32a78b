"""The workspace page: members and their roles, API keys. Everyone in the workspace sees it; owners and
admins change it (sources.access holds the rules). Rows of another workspace answer 404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from sources import access, services
from sources.models import ApiKey, Membership
from sources.selectors import current_membership
from sources.tenancy import workspace_scope
from sources.views import _forbidden, _layout


def _membership(request: HttpRequest) -> Membership:
    membership = current_membership(request)
    if membership is None:
        raise Http404
    return membership


def _page(request: HttpRequest, membership: Membership, status: int = 200, **extra: object) -> HttpResponse:
    with workspace_scope(membership.workspace_id):
        members = list(Membership.objects.select_related("user").order_by("user__username"))
        keys = list(ApiKey.objects.order_by("revoked_at", "-created_at"))
    context = _layout(
        request,
        membership,
        page="workspace",
        members=members,
        keys=keys,
        roles=Membership.Role.choices,
        **extra,
    )
    return render(request, "app/workspace.html", context, status=status)


def _refused(request: HttpRequest, membership: Membership, error: access.AccessError) -> HttpResponse:
    if not membership.can_manage:
        return _forbidden(request)
    return _page(request, membership, status=400, error=error.message)


@login_required
@require_GET
def workspace_page(request: HttpRequest) -> HttpResponse:
    return _page(request, _membership(request))


@login_required
@require_POST
def member_add(request: HttpRequest) -> HttpResponse:
    actor = _membership(request)
    try:
        added = access.member_add(
            actor=actor, identifier=request.POST.get("identifier", ""), role=request.POST.get("role", "")
        )
    except access.AccessError as exc:
        return _refused(request, actor, exc)
    messages.success(request, f"Added {added.user.username} as {added.get_role_display().lower()}.")
    return redirect("app-workspace")


def _member(actor: Membership, membership_id: int) -> Membership:
    with workspace_scope(actor.workspace_id):
        member = Membership.objects.select_related("user").filter(id=membership_id).first()
    if member is None:
        raise Http404("No such member.")
    return member


@login_required
@require_POST
def member_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    actor = _membership(request)
    member = _member(actor, membership_id)
    try:
        access.member_set_role(actor=actor, membership=member, role=request.POST.get("role", ""))
    except access.AccessError as exc:
        return _refused(request, actor, exc)
    messages.success(request, f"{member.user.username} is now {request.POST['role']}.")
    return redirect("app-workspace")


@login_required
@require_POST
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    actor = _membership(request)
    member = _member(actor, membership_id)
    try:
        access.member_remove(actor=actor, membership=member)
    except access.AccessError as exc:
        return _refused(request, actor, exc)
    messages.success(request, f"Removed {member.user.username} from the workspace.")
    return redirect("app-workspace" if member.id != actor.id else "app-home")


@login_required
@require_POST
def api_key_new(request: HttpRequest) -> HttpResponse:
    actor = _membership(request)
    if not actor.can_manage:
        return _forbidden(request)
    name = request.POST.get("name", "").strip()[:100] or "default"
    api_key, raw_key = services.api_key_create(workspace=actor.workspace, name=name)
    # Rendered, not redirected: the key is shown this once and never kept in a session or a message.
    response = _page(request, actor, new_key=raw_key, new_key_name=api_key.name)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    actor = _membership(request)
    with workspace_scope(actor.workspace_id):
        api_key = ApiKey.objects.filter(id=key_id).first()
    if api_key is None:
        raise Http404("No such key.")
    try:
        access.api_key_revoke(actor=actor, api_key=api_key)
    except access.AccessError as exc:
        return _refused(request, actor, exc)
    messages.success(request, f"Revoked the key {api_key.name} (gk_{api_key.prefix}_…).")
    return redirect("app-workspace")
