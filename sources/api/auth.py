"""Who is calling the REST API, and which workspace their requests are scoped to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from sources.models import ApiKey, Membership, Workspace

#: People read when a key was last used to the minute. Writing it on every request was a write and a
#: commit per search (~1 ms of a cached answer's ~4).
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """The caller behind an API key: a workspace, not a person."""

    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False

    @property
    def workspace(self) -> Workspace:
        return self.api_key.workspace


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer gk_<prefix>_<secret>` (or `X-Api-Key`)."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        raw = request.headers.get("X-Api-Key", "")
        header = request.headers.get("Authorization", "")
        if not raw and header.startswith(f"{self.keyword} "):
            raw = header[len(self.keyword) + 1 :].strip()
        if not raw:
            return None
        parts = raw.split("_", 2)
        if len(parts) != 3 or parts[0] != "gk" or len(parts[1]) != ApiKey.PREFIX_LENGTH:
            raise exceptions.AuthenticationFailed("Malformed API key.")
        # Lookup by the visible prefix must cross workspaces: the key is what tells us the workspace.
        api_key = ApiKey.unscoped.select_related("workspace").filter(prefix=parts[1]).first()
        if api_key is None or api_key.revoked_at is not None or not api_key.matches(raw):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_RESOLUTION:
            ApiKey.unscoped.filter(id=api_key.id).update(last_used_at=now)
        return ApiKeyPrincipal(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class SessionAuthentication(authentication.SessionAuthentication):
    """The web UI's session; the workspace is the one chosen in the session, if the user belongs to it."""


def workspace_for_request(request: Request) -> Workspace | None:
    user = request.user
    if isinstance(user, ApiKeyPrincipal):
        return user.workspace
    if user is not None and getattr(user, "is_authenticated", False):
        memberships = Membership.unscoped.select_related("workspace").filter(user=user)
        chosen = request.session.get("workspace_id") if hasattr(request, "session") else None
        membership = memberships.filter(workspace_id=chosen).first() if chosen else memberships.first()
        return membership.workspace if membership else None
    return None
