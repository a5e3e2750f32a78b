"""The OAuth 2 authorization-code dance, shared by the providers (integrations/<provider>/oauth.py say how
their endpoints look).

`begin` keeps a random `state` in the person's session together with the workspace and the PKCE verifier;
`finish` accepts a callback only for a state this session started, for the workspace that is current now,
within ten minutes, once. A callback carried to another browser, or replayed, finds no state and is refused.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from integrations.connections import expiry
from integrations.errors import ProviderError
from integrations.models import Connection
from integrations.providers import provider_module
from sources.tenancy import workspace_scope

SESSION_KEY = "integrations_oauth"
STATE_TTL_S = 600


@dataclass(frozen=True)
class Grant:
    """What a provider's token endpoint gave: the account and its tokens."""

    account_id: str
    access_token: str
    refresh_token: str = ""
    expires_in: int | None = None
    account_name: str = ""
    account_email: str = ""
    scopes: str = ""


class OAuthRefused(ProviderError):
    """The callback does not belong to this session and workspace, has expired, or the person declined."""


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def begin(
    *, session: MutableMapping[str, Any], provider: str, workspace_id: int, user_id: int, redirect_uri: str
) -> str:
    """The provider's consent page address for a new state kept in `session`."""
    module = provider_module(provider)
    state = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(64) if module.SUPPORTS_PKCE else ""
    pending = {
        key: value
        for key, value in session.get(SESSION_KEY, {}).items()
        if value.get("at", 0) > time.time() - STATE_TTL_S
    }
    pending[state] = {
        "provider": str(provider),
        "workspace_id": workspace_id,
        "user_id": user_id,
        "verifier": verifier,
        "redirect_uri": redirect_uri,
        "at": time.time(),
    }
    session[SESSION_KEY] = pending
    return module.authorize_url(
        state=state, redirect_uri=redirect_uri, code_challenge=_challenge(verifier) if verifier else ""
    )


def finish(
    *,
    session: MutableMapping[str, Any],
    provider: str,
    state: str,
    code: str,
    error: str,
    workspace_id: int,
    user: Any,
) -> Connection:
    """Check the callback against the session, exchange the code, and keep the connection."""
    pending = dict(session.get(SESSION_KEY, {}))
    started = pending.pop(state, None) if state else None
    session[SESSION_KEY] = pending  # a state is used once, whatever happens next
    if (
        started is None
        or started["provider"] != str(provider)
        or started["workspace_id"] != workspace_id
        or started["user_id"] != user.id
        or started["at"] < time.time() - STATE_TTL_S
    ):
        raise OAuthRefused(
            "This connection request was not started here, or has expired. Start again from this page.",
            f"state {state[:8]}… unknown to this session or for another workspace",
        )
    if error or not code:
        raise OAuthRefused("The connection was cancelled on the provider's page.", error or "no code")
    grant = provider_module(provider).exchange(
        code=code, redirect_uri=started["redirect_uri"], code_verifier=started["verifier"]
    )
    return connection_save(workspace_id=workspace_id, provider=provider, grant=grant, user=user)


def connection_save(*, workspace_id: int, provider: str, grant: Grant, user: Any) -> Connection:
    """Create the connection, or bring back the same account's (its sources find it again)."""
    with workspace_scope(workspace_id), transaction.atomic():
        connection, _ = Connection.objects.select_for_update().get_or_create(
            provider=provider, account_id=grant.account_id, defaults={"workspace_id": workspace_id}
        )
        connection.account_name = grant.account_name[:300]
        connection.account_email = grant.account_email[:300]
        connection.scopes = grant.scopes[:1000]
        connection.access_token = grant.access_token
        connection.refresh_token = grant.refresh_token or connection.refresh_token
        connection.token_expires_at = expiry(grant.expires_in)
        connection.status = Connection.State.ACTIVE
        connection.last_error = connection.last_error_detail = ""
        connection.connected_by = user
        connection.save()
    return connection
