"""Reads about sources that several views need."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest

from sources.models import Membership


def memberships_of(user: AbstractBaseUser) -> list[Membership]:
    # A person's memberships span workspaces by nature: this is the workspace switcher's list.
    return list(Membership.unscoped.select_related("workspace").filter(user=user).order_by("workspace__name"))


def current_membership(request: HttpRequest) -> Membership | None:
    memberships = memberships_of(request.user)
    chosen = request.session.get("workspace_id")
    for membership in memberships:
        if membership.workspace_id == chosen:
            return membership
    return memberships[0] if memberships else None
