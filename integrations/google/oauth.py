"""Google's OAuth 2 for web server apps (https://developers.google.com/identity/protocols/oauth2/web-server):
offline access for a refresh token, PKCE (S256), and the one read-only scope that lets a person pick any
Doc they can read: `drive.readonly` (`drive.file` would need Google's Picker in the page, file by file)."""

from __future__ import annotations

from urllib.parse import urlencode

import httpx
from django.conf import settings

from integrations.errors import ProviderError, ReconnectNeeded
from integrations.google.client import DriveClient
from integrations.http import json_of, raise_for_common, send
from integrations.models import Connection
from integrations.oauth import Grant

SUPPORTS_PKCE = True
SCOPES = "https://www.googleapis.com/auth/drive.readonly"


def configured() -> bool:
    return bool(settings.GOOGLE_CLIENT_ID and settings.GOOGLE_CLIENT_SECRET)


def authorize_url(*, state: str, redirect_uri: str, code_challenge: str = "") -> str:
    query = {
        "client_id": settings.GOOGLE_CLIENT_ID,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": SCOPES,
        "access_type": "offline",
        "prompt": "consent",  # a refresh token every time, also when the account connected before
        "include_granted_scopes": "true",
        "state": state,
    }
    if code_challenge:
        query.update(code_challenge=code_challenge, code_challenge_method="S256")
    return f"{settings.GOOGLE_AUTH_URL}?{urlencode(query)}"


def _token_request(form: dict) -> httpx.Response:
    request = httpx.Request(
        "POST",
        f"{settings.GOOGLE_OAUTH_BASE_URL.rstrip('/')}/token",
        data={"client_id": settings.GOOGLE_CLIENT_ID, "client_secret": settings.GOOGLE_CLIENT_SECRET, **form},
    )
    return send(request, what="Google token")


def exchange(*, code: str, redirect_uri: str, code_verifier: str = "") -> Grant:
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if code_verifier:
        form["code_verifier"] = code_verifier
    response = _token_request(form)
    if response.status_code in (400, 401):
        raise ProviderError("Google refused the connection; please try again.", response.text[:500])
    raise_for_common(response, what="Google token")
    token = json_of(response, what="Google token")
    user = DriveClient(access_token=token["access_token"]).about().get("user", {})
    return Grant(
        account_id=user.get("permissionId") or user.get("emailAddress", ""),
        account_name=user.get("displayName", ""),
        account_email=user.get("emailAddress", ""),
        scopes=token.get("scope", SCOPES),
        access_token=token["access_token"],
        refresh_token=token.get("refresh_token", ""),
        expires_in=token.get("expires_in"),
    )


def refresh(connection: Connection) -> Grant:
    if not connection.refresh_token:
        raise ReconnectNeeded("Reconnect Google to sync this source.", "no refresh token")
    response = _token_request({"grant_type": "refresh_token", "refresh_token": connection.refresh_token})
    if response.status_code in (400, 401):
        # invalid_grant: the refresh token was revoked, expired or the password changed.
        raise ReconnectNeeded("Reconnect Google to sync this source.", response.text[:500])
    raise_for_common(response, what="Google token refresh")
    token = json_of(response, what="Google token refresh")
    return Grant(
        account_id=connection.account_id,
        access_token=token["access_token"],
        refresh_token=token.get("refresh_token", ""),
        expires_in=token.get("expires_in"),
    )


def revoke(connection: Connection) -> bool:
    token = connection.refresh_token or connection.access_token
    if not token:
        return False
    request = httpx.Request(
        "POST", f"{settings.GOOGLE_OAUTH_BASE_URL.rstrip('/')}/revoke", data={"token": token}
    )
    try:
        return send(request, what="Google revoke").status_code == 200
    except ProviderError:
        return False
