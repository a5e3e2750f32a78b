"""Writes to a connection's life after OAuth: a fresh access token, needing a reconnect, disconnecting.
Sources find their connection by id in Source.config["connection"]."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from integrations.errors import ProviderError
from integrations.models import Connection
from integrations.providers import provider_module
from sources.models import Source, Status
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

# A token this close to its expiry is refreshed before use rather than after a 401.
EXPIRY_MARGIN = timedelta(seconds=60)


def expiry(expires_in: int | None) -> datetime | None:
    return timezone.now() + timedelta(seconds=int(expires_in)) if expires_in else None


def reconnect_message(connection: Connection) -> str:
    return f"Reconnect {connection.get_provider_display()} to sync this source."


def connection_sources(connection: Connection) -> list[Source]:
    with workspace_scope(connection.workspace_id):
        return list(Source.objects.filter(config__connection=connection.id))


def fresh_access_token(connection: Connection) -> str:
    """The connection's access token, refreshed first when it is about to expire. ReconnectNeeded when
    the provider refuses the refresh token (invalid_grant)."""

    expires = connection.token_expires_at
    if expires is None or expires > timezone.now() + EXPIRY_MARGIN:
        return connection.access_token
    return refresh_token(connection)


def refresh_token(connection: Connection) -> str:
    grant = provider_module(connection.provider).refresh(connection)
    with workspace_scope(connection.workspace_id):
        connection.access_token = grant.access_token
        connection.refresh_token = grant.refresh_token or connection.refresh_token
        connection.token_expires_at = expiry(grant.expires_in)
        Connection.objects.filter(id=connection.id).update(
            access_token=connection.access_token,
            refresh_token=connection.refresh_token,
            token_expires_at=connection.token_expires_at,
        )
    return connection.access_token


def mark_needs_reconnect(*, connection: Connection, message: str, detail: str) -> None:
    """The token no longer works: the connection and every source using it say so. Their documents and
    chunks are kept (still searchable) until an admin deletes the source."""
    with workspace_scope(connection.workspace_id), transaction.atomic():
        Connection.objects.filter(id=connection.id).update(
            status=Connection.State.NEEDS_RECONNECT, last_error=message[:500], last_error_detail=detail
        )
        sources = Source.objects.filter(config__connection=connection.id)
        note = reconnect_message(connection)
        for source in sources:
            # Pages still waiting to be synced will not be: they stop here, so nothing hangs.
            source.documents.filter(status__in=[Status.PENDING, Status.CRAWLING]).update(
                status=Status.FAILED, error=note, error_detail=detail
            )
        sources.update(error=note, error_detail=detail, status=Status.FAILED)
    connection.status = Connection.State.NEEDS_RECONNECT


def connection_disconnect(*, connection: Connection) -> bool:
    """Revoke the token at the provider when it can be, delete the tokens, and mark the sources as needing
    a reconnect. Returns whether the provider confirmed the revocation."""
    try:
        revoked = provider_module(connection.provider).revoke(connection)
    except ProviderError as exc:
        log.warning("revoking connection %s failed: %s", connection.id, exc.detail)
        revoked = False
    with workspace_scope(connection.workspace_id):
        Connection.objects.filter(id=connection.id).update(
            access_token="", refresh_token="", token_expires_at=None
        )
    connection.access_token = connection.refresh_token = ""
    mark_needs_reconnect(
        connection=connection,
        message="Disconnected. Connect again to sync its sources.",
        detail="disconnected by an admin" + ("; revoked at the provider" if revoked else "; not revoked"),
    )
    return revoked
