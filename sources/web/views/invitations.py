"""Where people without a workspace land, and invitations from the invitee's side: the mailed link's page
and accepting. Owners and admins send and withdraw invitations on the members page (views/access.py); the
rules live in sources.invitations."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from sources import invitations
from sources.accounts import INVITED_SESSION_KEY, verified_emails
from sources.models import Invitation, Membership
from sources.selectors import memberships_of
from sources.services import workspace_create
from sources.web.lookups import SignedInRequest

UNCONFIRMED = "Confirm your e-mail address first: open the link we mailed you, then come back."


def _joined(request: HttpRequest, membership: Membership) -> HttpResponse:
    request.session["workspace_id"] = membership.workspace_id
    messages.success(request, f"You joined {membership.workspace.name} as {membership.role}.")
    return redirect("app-home")


@login_required
@require_GET
def welcome(request: SignedInRequest) -> HttpResponse:
    """Create a workspace, or accept an invitation sent to one of your confirmed addresses."""
    return _welcome(request)


def _welcome(request: SignedInRequest, status: int = 200, **extra: object) -> HttpResponse:
    context = {
        "invitations": invitations.invitations_for(request.user),
        "confirmed": bool(verified_emails(request.user)),
        "memberships": memberships_of(request.user),
        **extra,
    }
    return render(request, "app/welcome.html", context, status=status)


@login_required
@require_POST
def workspace_new(request: SignedInRequest) -> HttpResponse:
    # Sign-in already requires a confirmed address; this holds for accounts an operator made without one.
    if not verified_emails(request.user):
        return _welcome(request, status=403, error=UNCONFIRMED)
    try:
        workspace = workspace_create(name=request.POST.get("name", ""), owner=request.user)
    except ValueError as exc:
        return _welcome(request, status=400, error=str(exc))
    request.session["workspace_id"] = workspace.id
    messages.success(request, f"Created {workspace.name}. Add an agent, then give it something to know.")
    return redirect("app-home")


def _refused_status(invitation: Invitation) -> int:
    return 403 if invitations.is_pending(invitation) else 410


@require_http_methods(["GET", "POST"])
def invitation_page(request: HttpRequest, token: str) -> HttpResponse:
    """The mailed link. Anyone holding it sees which workspace invites which address; accepting takes an
    account that has confirmed that address."""
    invitation = invitations.invitation_by_token(token)
    if invitation is None:
        raise Http404("No such invitation.")
    user = request.user if request.user.is_authenticated else None
    if request.method == "POST":
        if user is None:
            return redirect_to_login(request.path)
        try:
            return _joined(request, invitations.invitation_accept(invitation=invitation, user=user))
        except invitations.InvitationError as exc:
            return _invitation(request, invitation, exc.message)
    if user is None and invitations.is_pending(invitation):
        request.session[INVITED_SESSION_KEY] = True  # sign-up stays open to them when it is closed
    return _invitation(request, invitation, invitations.refusal(invitation, user))


def _invitation(request: HttpRequest, invitation: Invitation, reason: str | None) -> HttpResponse:
    context = {"invitation": invitation, "reason": reason, "next": request.path}
    status = _refused_status(invitation) if reason else 200
    return render(request, "account/invitation.html", context, status=status)


@login_required
@require_POST
def invitation_accept(request: SignedInRequest, invitation_id: int) -> HttpResponse:
    """Accept from the welcome page's list: only invitations addressed to this person exist here."""
    invitation = next((i for i in invitations.invitations_for(request.user) if i.id == invitation_id), None)
    if invitation is None:
        raise Http404("No such invitation.")
    try:
        return _joined(request, invitations.invitation_accept(invitation=invitation, user=request.user))
    except invitations.InvitationError as exc:
        return _welcome(request, status=_refused_status(invitation), error=exc.message)
