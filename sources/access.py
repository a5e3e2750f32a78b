"""Who may use a workspace and change it: its members' roles, its API keys, its settings.

Rules, checked here rather than in views so every entry point obeys them (sources/invitations.py too):
- owners and admins manage members and keys; members manage nothing;
- only an owner grants the owner role or changes or removes an owner;
- a workspace always keeps at least one owner.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from sources import key_rows, quotas
from sources.models import ApiKey, Membership, Schedule, Workspace
from sources.tenancy import workspace_scope

Role = Membership.Role


class AccessError(Exception):
    """A refused change, with a message for the person who asked."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def require_manager(actor: Membership) -> None:
    if not actor.can_manage:
        raise AccessError("Only owners and admins can manage this workspace's members and keys.")


def require_owner_for(actor: Membership, *roles: str) -> None:
    if Role.OWNER in roles and actor.role != Role.OWNER:
        raise AccessError("Only an owner can grant, change or remove the owner role.")


def member_add(*, actor: Membership, identifier: str, role: str) -> Membership:
    """Add an existing account, found by username or email, with a role."""
    require_manager(actor)
    if role not in Role.values:
        raise AccessError("Choose a role: owner, admin or member.")
    require_owner_for(actor, role)
    identifier = identifier.strip()
    if not identifier:
        raise AccessError("Give the person's username or email.")
    users = get_user_model().objects.filter(Q(username__iexact=identifier) | Q(email__iexact=identifier))
    user = users.first() if users.count() == 1 else None
    if user is None:
        raise AccessError(f"No single account matches {identifier!r}; ask them for their username.")
    with workspace_scope(actor.workspace_id), transaction.atomic():
        if Membership.objects.filter(user=user).exists():
            raise AccessError(f"{user.username} is already a member of this workspace.")
        # QuotaExceeded when the plan's members are all taken; holds the workspace until the seat is taken.
        quotas.check_members(actor.workspace)
        return Membership.objects.create(user=user, role=role)


def member_set_role(*, actor: Membership, membership: Membership, role: str) -> None:
    require_manager(actor)
    if role not in Role.values:
        raise AccessError("Choose a role: owner, admin or member.")
    require_owner_for(actor, role, membership.role)
    with workspace_scope(actor.workspace_id), transaction.atomic():
        _keep_an_owner(membership, leaving=role != Role.OWNER)
        Membership.objects.filter(id=membership.id).update(role=role)


def member_remove(*, actor: Membership, membership: Membership) -> None:
    require_manager(actor)
    require_owner_for(actor, membership.role)
    with workspace_scope(actor.workspace_id), transaction.atomic():
        _keep_an_owner(membership, leaving=True)
        Membership.objects.filter(id=membership.id).delete()


def _keep_an_owner(membership: Membership, *, leaving: bool) -> None:
    """Refuse to take the owner role from the last owner. The owners' rows are locked so two admins
    demoting the last two owners at once cannot both succeed."""
    if not leaving or membership.role != Role.OWNER:
        return
    owners = list(Membership.objects.select_for_update().filter(role=Role.OWNER).values_list("id", flat=True))
    if owners == [membership.id]:
        raise AccessError("A workspace needs an owner: make someone else an owner first.")


def api_key_revoke(*, actor: Membership, api_key: ApiKey) -> None:
    """A revoked key stops working at once (sources.api.auth checks revoked_at); the row stays so
    listings and the admin still show which key it was."""
    require_manager(actor)
    with workspace_scope(actor.workspace_id):
        ApiKey.objects.filter(id=api_key.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    # Every web process forgets its kept key rows when the change's notification comes; this one at
    # once, so its own next request cannot race the notification (sources/key_rows.py).
    transaction.on_commit(key_rows.rows.forget_all)


def workspace_update(*, actor: Membership, name: str, default_schedule: str) -> None:
    """The workspace's name and the re-sync schedule new sources get unless their creator picks one
    (ingestion.freshness.schedule_for_new)."""
    require_manager(actor)
    name = name.strip()
    if not name:
        raise AccessError("Give the workspace a name.")
    if default_schedule not in Schedule.values:
        raise AccessError(f"Choose a schedule: {', '.join(Schedule.values)}.")
    Workspace.objects.filter(id=actor.workspace_id).update(name=name[:200], default_schedule=default_schedule)
    actor.workspace.name, actor.workspace.default_schedule = name[:200], default_schedule
