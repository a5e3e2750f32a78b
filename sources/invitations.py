"""Invitations: an owner or admin invites an e-mail address with a role; the person opens the mailed link,
signs in or signs up with that address, confirms it, and accepts.

Rules (the same as sources.access for adding members): owners and admins invite; only an owner invites an
owner. An invitation works until it expires (INVITATION_EXPIRY_DAYS), is revoked, or is accepted once. The
link carries a random token of which only a hash is kept, so the database alone cannot accept anything.
Looking an invitation up by its token crosses workspaces on purpose (the person is not a member yet), so
it uses the explicit `unscoped` manager; everything else runs in the inviting workspace's scope.
"""

from __future__ import annotations

import hashlib
import secrets
import smtplib
from datetime import timedelta

import structlog
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, User
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from sources import quotas
from sources.access import AccessError, require_manager, require_owner_for
from sources.accounts import verified_emails
from sources.models import Invitation, Membership
from sources.tenancy import workspace_scope

Role = Membership.Role
log = structlog.get_logger(__name__)


class InvitationError(AccessError):
    """An invitation that cannot be accepted (expired, revoked, used, or for another address)."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_pending(invitation: Invitation) -> bool:
    return (
        invitation.accepted_at is None
        and invitation.revoked_at is None
        and invitation.expires_at > timezone.now()
    )


def invite(*, actor: Membership, email: str, role: str, base_url: str) -> Invitation:
    """Create an invitation and mail its link (base_url + the accept page). A pending invitation of the
    same address is replaced: its link stops working, so only the newest mail counts."""
    require_manager(actor)
    if role not in Role.values:
        raise AccessError("Choose a role: owner, admin or member.")
    require_owner_for(actor, role)
    email = email.strip().lower()
    try:
        validate_email(email)
    except ValidationError as exc:
        raise AccessError(f"{email!r} is not an e-mail address.") from exc
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    with workspace_scope(actor.workspace_id), transaction.atomic():
        members = Membership.objects.filter(user__email__iexact=email) | Membership.objects.filter(
            user__emailaddress__email__iexact=email, user__emailaddress__verified=True
        )
        if members.exists():
            raise AccessError(f"{email} is already a member of this workspace.")
        # Pending invitations hold a seat each, so a full plan refuses the invitation, not its acceptance.
        # They are counted holding the workspace, as the members are (sources.quotas).
        quotas.hold_workspace(actor.workspace_id)
        others = _pending(Invitation.objects.exclude(email=email)).count()
        quotas.check_members(actor.workspace, adding=1 + others)
        invitation = Invitation.objects.create(
            email=email,
            role=role,
            token_hash=_hash(token),
            invited_by=actor.user,
            expires_at=now + timedelta(days=settings.INVITATION_EXPIRY_DAYS),
        )
    # Mailed once the seat is taken and the workspace's row is free again: a slow mail server (up to
    # EMAIL_TIMEOUT) must not hold every other request that takes stock in this workspace. If it refuses,
    # the invitation nobody got is deleted, and earlier links to the address are revoked only once the
    # new one was sent.
    link = base_url.rstrip("/") + reverse("invitation", kwargs={"token": token})
    context = {"workspace": actor.workspace, "inviter": actor.user, "invitation": invitation, "link": link}
    try:
        send_mail(
            subject=f"{settings.ACCOUNT_EMAIL_SUBJECT_PREFIX}Join {actor.workspace.name} on Grounded",
            message=render_to_string("account/email/invitation.txt", context),
            from_email=None,
            recipient_list=[email],
        )
    except (smtplib.SMTPException, OSError) as exc:
        log.warning("invitation_mail_failed", workspace_id=actor.workspace_id, error=repr(exc))
        with workspace_scope(actor.workspace_id):
            Invitation.objects.filter(id=invitation.id).delete()
        raise AccessError(
            "The invitation could not be mailed, so it was not saved. Try again later; if it keeps "
            "failing, an operator should check the server's mail settings."
        ) from exc
    with workspace_scope(actor.workspace_id):
        _pending(Invitation.objects.filter(email=email).exclude(id=invitation.id)).update(revoked_at=now)
    return invitation


def _pending(invitations: QuerySet[Invitation]) -> QuerySet[Invitation]:
    return invitations.filter(
        accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()
    )


def invitation_revoke(*, actor: Membership, invitation: Invitation) -> None:
    """The link stops working at once; the row stays so the list shows who was invited."""
    require_manager(actor)
    require_owner_for(actor, invitation.role)
    with workspace_scope(actor.workspace_id):
        done = _pending(Invitation.objects.filter(id=invitation.id)).update(revoked_at=timezone.now())
    if not done:
        raise AccessError("That invitation was already accepted, revoked or expired.")


def pending_invitations(*, workspace_id: int) -> list[Invitation]:
    with workspace_scope(workspace_id):
        return list(_pending(Invitation.objects.select_related("invited_by")).order_by("-created_at"))


def invitation_by_token(token: str) -> Invitation | None:
    return Invitation.unscoped.select_related("workspace").filter(token_hash=_hash(token)).first()


def invitations_for(user: AbstractBaseUser) -> list[Invitation]:
    """Pending invitations addressed to an address this person has confirmed, from any workspace."""
    emails = verified_emails(user)
    if not emails:
        return []
    invitations = Invitation.unscoped.select_related("workspace", "invited_by").filter(email__in=emails)
    return list(_pending(invitations).order_by("-created_at"))


def refusal(invitation: Invitation, user: AbstractBaseUser | None) -> str | None:
    """Why this person cannot accept this invitation now, for them to read; None if they can."""
    if invitation.accepted_at is not None:
        return "This invitation has been accepted already."
    if invitation.revoked_at is not None:
        return "This invitation was withdrawn. Ask the person who invited you for a new one."
    if invitation.expires_at <= timezone.now():
        return "This invitation has expired. Ask the person who invited you for a new one."
    if user is not None and invitation.email not in verified_emails(user):
        return (
            "This invitation was sent to another address than the ones confirmed on your account. Sign out, "
            "then sign in or sign up with the address the invitation was sent to."
        )
    return None


def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    """Make the person a member with the invited role. The invitation is claimed with a conditional UPDATE,
    so two clicks (or two people) accept it once."""
    reason = refusal(invitation, user)
    if reason:
        raise InvitationError(reason)
    with workspace_scope(invitation.workspace_id), transaction.atomic():
        already = Membership.objects.filter(user=user).exists()
        if not already:
            try:  # the plan may have been lowered, or seats taken by direct adds, since it was sent
                quotas.check_members(invitation.workspace)
            except quotas.QuotaExceeded as exc:
                raise InvitationError(
                    f"{exc.message} Ask the workspace's owner to free a seat or change the plan."
                ) from exc
        claimed = _pending(Invitation.objects.filter(id=invitation.id)).update(
            accepted_at=timezone.now(), accepted_by=user
        )
        if not claimed:
            raise InvitationError("This invitation was accepted, withdrawn or expired a moment ago.")
        membership, _created = Membership.objects.get_or_create(user=user, defaults={"role": invitation.role})
    return membership
