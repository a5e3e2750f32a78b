"""Who is calling the REST API, and which workspace their requests are scoped to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from sources import key_rows
from sources.models import ApiKey, Membership, Workspace

#: People read when a key was last used to the minute. Writing it on every request was a write and a
#: commit per search, a large share of a cached answer (docs/BENCHMARKS.md).
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
        api_key = key_with_workspace(parts[1])
        if api_key is None or api_key.revoked_at is not None or not api_key.matches(raw):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_RESOLUTION:
            ApiKey.unscoped.filter(id=api_key.id).update(last_used_at=now)
            key_rows.rows.used(api_key.prefix, now)
        return ApiKeyPrincipal(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


_KEY_FIELDS = list(ApiKey._meta.concrete_fields)
_WORKSPACE_FIELDS = list(Workspace._meta.concrete_fields)


def _columns(fields: list, alias: str) -> str:
    return ", ".join(f'{alias}."{field.column}"' for field in fields)


# The key and its workspace in one statement written out once: building the same lookup through the ORM
# (select_related) cost more than running it, on every request (docs/BENCHMARKS.md). Lookup by the
# visible prefix must cross workspaces: the key is what tells us the workspace.
KEY_LOOKUP = (
    f"SELECT {_columns(_KEY_FIELDS, 'k')}, {_columns(_WORKSPACE_FIELDS, 'w')} "
    f'FROM "{ApiKey._meta.db_table}" k JOIN "{Workspace._meta.db_table}" w ON w."id" = k."workspace_id" '
    'WHERE k."prefix" = %s'
)
_KEY_ATTNAMES = [field.attname for field in _KEY_FIELDS]
_WORKSPACE_ATTNAMES = [field.attname for field in _WORKSPACE_FIELDS]


def key_with_workspace(prefix: str) -> ApiKey | None:
    """The API key with this prefix and its workspace, or None: from the rows this process keeps
    (sources/key_rows.py) when it can, else read. The columns are plain values (text, numbers,
    timestamps), so the rows become model instances as the ORM would make them, new ones each time."""
    kept = key_rows.rows.get(prefix)
    if kept is not None:
        return _instances(kept.row, last_used_at=kept.last_used_at)
    epoch = key_rows.rows.epoch()
    with connection.cursor() as cursor:
        cursor.execute(KEY_LOOKUP, [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key = _instances(row)
    key_rows.rows.keep(prefix, row, api_key.last_used_at, epoch)
    return api_key


def _instances(row: tuple, **changed: object) -> ApiKey:
    split = len(_KEY_ATTNAMES)
    api_key = ApiKey.from_db(connection.alias, _KEY_ATTNAMES, row[:split])
    api_key.workspace = Workspace.from_db(connection.alias, _WORKSPACE_ATTNAMES, row[split:])
    for name, value in changed.items():
        setattr(api_key, name, value)
    return api_key


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
