"""Notion's public-integration OAuth (https://developers.notion.com/docs/authorization): the user picks the
pages to share on Notion's consent page; the code is exchanged with HTTP Basic client credentials. Notion
documents no PKCE, so none is sent; `state` is bound to the session and workspace (integrations/oauth.py)."""

from __future__ import annotations

import base64
from urllib.parse import urlencode

import httpx
from django.conf import settings

from integrations.errors import ProviderError, ReconnectNeeded
from integrations.http import json_of, raise_for_common, send
from integrations.models import Connection
from integrations.oauth import Grant

SUPPORTS_PKCE = False
SCOPES = ""  # Notion grants what the user shares on the consent page; there are no scopes to ask.


def configured() -> bool:
    return bool(settings.NOTION_CLIENT_ID and settings.NOTION_CLIENT_SECRET)


def authorize_url(*, state: str, redirect_uri: str, code_challenge: str = "") -> str:
    query = urlencode(
        {
            "client_id": settings.NOTION_CLIENT_ID,
            "response_type": "code",
            "owner": "user",
            "redirect_uri": redirect_uri,
            "state": state,
        }
    )
    return f"{settings.NOTION_API_BASE_URL.rstrip('/')}/v1/oauth/authorize?{query}"


def _basic() -> str:
    pair = f"{settings.NOTION_CLIENT_ID}:{settings.NOTION_CLIENT_SECRET}".encode()
    return "Basic " + base64.b64encode(pair).decode()


def _post(path: str, body: dict) -> httpx.Response:
    request = httpx.Request(
        "POST",
        f"{settings.NOTION_API_BASE_URL.rstrip('/')}{path}",
        json=body,
        headers={"Authorization": _basic(), "Notion-Version": settings.NOTION_VERSION},
    )
    return send(request, what=f"Notion POST {path}")


def exchange(*, code: str, redirect_uri: str, code_verifier: str = "") -> Grant:
    response = _post(
        "/v1/oauth/token", {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    )
    if response.status_code == 400:
        raise ProviderError("Notion refused the connection; please try again.", response.text[:500])
    raise_for_common(response, what="Notion token")
    token = json_of(response, what="Notion token")
    owner = (token.get("owner") or {}).get("user") or {}
    return Grant(
        account_id=token.get("bot_id") or token.get("workspace_id", ""),
        account_name=token.get("workspace_name") or "Notion workspace",
        account_email=(owner.get("person") or {}).get("email", "") or owner.get("name", ""),
        scopes=SCOPES,
        access_token=token["access_token"],
        refresh_token=token.get("refresh_token") or "",
        expires_in=token.get("expires_in"),
    )


def refresh(connection: Connection) -> Grant:
    """Notion's tokens used to be permanent; integrations made since 2025 may get a refresh token."""
    if not connection.refresh_token:
        raise ReconnectNeeded("Reconnect Notion to sync this source.", "the token expired; no refresh token")
    response = _post(
        "/v1/oauth/token", {"grant_type": "refresh_token", "refresh_token": connection.refresh_token}
    )
    if response.status_code in (400, 401):
        raise ReconnectNeeded("Reconnect Notion to sync this source.", response.text[:500])
    raise_for_common(response, what="Notion token refresh")
    token = json_of(response, what="Notion token refresh")
    return Grant(
        account_id=connection.account_id,
        access_token=token["access_token"],
        refresh_token=token.get("refresh_token") or connection.refresh_token,
        expires_in=token.get("expires_in"),
    )


def revoke(connection: Connection) -> bool:
    """Revoke the token at Notion (POST /v1/oauth/revoke). False when Notion did not confirm it."""
    if not connection.access_token:
        return False
    try:
        response = _post("/v1/oauth/revoke", {"token": connection.access_token})
    except ProviderError:
        return False
    return response.status_code == 200
