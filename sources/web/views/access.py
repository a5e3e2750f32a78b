"""The workspace page: members and their roles, pending invitations, API keys. Everyone in the workspace sees
it; owners and admins change it (sources.access holds the rules). Rows of another workspace answer 404."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from sources import access, invitations, services
from sources.models import ApiKey, Invitation, Membership
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.web.decorators import forbidden
from sources.web.lookups import SignedInRequest, membership_or_404
from sources.web.views.common import layout


def _page(
    request: SignedInRequest, membership: Membership, status: int = 200, **extra: object
) -> HttpResponse:
    with workspace_scope(membership.workspace_id):
        members = list(Membership.objects.select_related("user").order_by("user__username"))
        keys = list(ApiKey.objects.order_by("revoked_at", "-created_at"))
    context = layout(
        request,
        membership,
        page="workspace",
        members=members,
        keys=keys,
        roles=Membership.Role.choices,
        invitations=invitations.pending_invitations(workspace_id=membership.workspace_id)
        if membership.can_manage
        else [],
        invitation_days=invitation_days(),
        **extra,
    )
    return render(request, "app/workspace.html", context, status=status)


def _refused(request: SignedInRequest, membership: Membership, error: access.AccessError) -> HttpResponse:
    if not membership.can_manage:
        return forbidden(request)
    return _page(request, membership, status=400, error=error.message)


@login_required
@require_GET
def workspace_page(request: SignedInRequest) -> HttpResponse:
    return _page(request, membership_or_404(request))


def _change(
    request: SignedInRequest, actor: Membership, change: Callable[[], str], to: str = "app-workspace"
) -> HttpResponse:
    """Run a change from sources.access; it returns what to tell the person, or refuses."""
    try:
        done = change()
    except access.AccessError as exc:
        return _refused(request, actor, exc)
    except QuotaExceeded as exc:  # the plan's members
        messages.error(request, exc.message)
        return _page(request, actor, status=exc.status, error=exc.message)
    messages.success(request, done)
    return redirect(to)


@login_required
@require_POST
def member_add(request: SignedInRequest) -> HttpResponse:
    actor = membership_or_404(request)

    def add() -> str:
        identifier, role = request.POST.get("identifier", ""), request.POST.get("role", "")
        added = access.member_add(actor=actor, identifier=identifier, role=role)
        return f"Added {added.user.username} as {added.get_role_display().lower()}."

    return _change(request, actor, add)


def _member(actor: Membership, membership_id: int) -> Membership:
    with workspace_scope(actor.workspace_id):
        member = Membership.objects.select_related("user").filter(id=membership_id).first()
    if member is None:
        raise Http404("No such member.")
    return member


@login_required
@require_POST
def member_role(request: SignedInRequest, membership_id: int) -> HttpResponse:
    actor = membership_or_404(request)
    member = _member(actor, membership_id)
    role = request.POST.get("role", "")

    def set_role() -> str:
        access.member_set_role(actor=actor, membership=member, role=role)
        return f"{member.user.username} is now {role}."

    return _change(request, actor, set_role)


@login_required
@require_POST
def member_remove(request: SignedInRequest, membership_id: int) -> HttpResponse:
    actor = membership_or_404(request)
    member = _member(actor, membership_id)

    def remove() -> str:
        access.member_remove(actor=actor, membership=member)
        return f"Removed {member.user.username} from the workspace."

    # Someone who removed themselves can no longer see this page.
    return _change(request, actor, remove, to="app-workspace" if member.id != actor.id else "app-home")


@login_required
@require_POST
def api_key_new(request: SignedInRequest) -> HttpResponse:
    actor = membership_or_404(request)
    if not actor.can_manage:
        return forbidden(request)
    name = request.POST.get("name", "").strip()[:100] or "default"
    api_key, raw_key = services.api_key_create(workspace=actor.workspace, name=name)
    # Rendered, not redirected: the key is shown this once and never kept in a session or a message.
    response = _page(request, actor, new_key=raw_key, new_key_name=api_key.name)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_key_revoke(request: SignedInRequest, key_id: int) -> HttpResponse:
    actor = membership_or_404(request)
    with workspace_scope(actor.workspace_id):
        api_key = ApiKey.objects.filter(id=key_id).first()
    if api_key is None:
        raise Http404("No such key.")

    def revoke() -> str:
        access.api_key_revoke(actor=actor, api_key=api_key)
        return f"Revoked the key {api_key.name} (gk_{api_key.prefix}_…)."

    return _change(request, actor, revoke)


@login_required
@require_POST
def invitation_new(request: SignedInRequest) -> HttpResponse:
    actor = membership_or_404(request)

    def send() -> str:
        email, role = request.POST.get("email", ""), request.POST.get("role", "")
        base_url = settings.PUBLIC_BASE_URL or request.build_absolute_uri("/")
        sent = invitations.invite(actor=actor, email=email, role=role, base_url=base_url)
        role_name = sent.get_role_display().lower()
        return f"Invited {sent.email} as {role_name}; the link works for {invitation_days()}."

    return _change(request, actor, send)


@login_required
@require_POST
def invitation_revoke(request: SignedInRequest, invitation_id: int) -> HttpResponse:
    actor = membership_or_404(request)
    with workspace_scope(actor.workspace_id):
        invitation = Invitation.objects.filter(id=invitation_id).first()
    if invitation is None:
        raise Http404("No such invitation.")

    def revoke() -> str:
        invitations.invitation_revoke(actor=actor, invitation=invitation)
        return f"Withdrew the invitation of {invitation.email}; its link no longer works."

    return _change(request, actor, revoke)


def invitation_days() -> str:
    days = settings.INVITATION_EXPIRY_DAYS
    return f"{days} day" if days == 1 else f"{days} days"
