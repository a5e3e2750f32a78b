"""Google Drive's REST API v3 (https://developers.google.com/drive/api/reference/rest/v3), called with httpx.

Why not google-api-python-client: it builds its methods from a discovery document fetched at start (or
shipped per version), sends through httplib2 rather than httpx, and retries on its own; pointing it and
google-auth's refresh at a configurable base URL is possible but three packages deep. Four documented calls
are used (about, files.list, files.get, files.export), with the token refreshed here: an expired access
token is refreshed and the call retried once; a refused refresh (invalid_grant) needs a reconnect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
from django.conf import settings

from integrations.connections import fresh_access_token, refresh_token
from integrations.errors import ObjectGone, ProviderRateLimited, ReconnectNeeded
from integrations.http import json_of, pause_connection, raise_for_common, send, wait_for_turn
from integrations.models import Connection, Provider

DOC_MIME = "application/vnd.google-apps.document"
FOLDER_MIME = "application/vnd.google-apps.folder"
SHORTCUT_MIME = "application/vnd.google-apps.shortcut"
FILE_FIELDS = "id,name,mimeType,modifiedTime,version,webViewLink,trashed,parents,shortcutDetails"
QUOTA_REASONS = {"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "dailyLimitExceeded"}
PAGE_SIZE = 100


def _reasons(response: httpx.Response) -> set[str]:
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        return set()
    return {e.get("reason", "") for e in error.get("errors", []) if isinstance(e, dict)}


def quoted(value: str) -> str:
    """A literal inside a Drive query string."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class DriveClient:
    def __init__(self, connection: Connection | None = None, *, access_token: str = "") -> None:
        if connection is not None and connection.provider != Provider.GOOGLE:
            raise ValueError(f"connection {connection.id} is not a Google connection")
        self.connection = connection
        self.access_token = access_token
        self.base_url = settings.GOOGLE_API_BASE_URL.rstrip("/")

    def _token(self, *, refresh: bool = False) -> str:
        if self.connection is None:
            return self.access_token
        if not self.connection.access_token:
            raise ReconnectNeeded("Reconnect Google to sync this source.", "no token (disconnected)")
        return refresh_token(self.connection) if refresh else fresh_access_token(self.connection)

    def call(self, path: str, *, params: dict | None = None, raw: bool = False) -> Any:
        what = f"Google GET {path}"
        for attempt in (0, 1):
            if self.connection is not None:
                wait_for_turn(self.connection.id, settings.GOOGLE_REQUESTS_PER_SECOND)
            request = httpx.Request(
                "GET",
                f"{self.base_url}{path}",
                params=params,
                headers={"Authorization": f"Bearer {self._token(refresh=attempt == 1)}"},
            )
            response = send(request, what=what)
            if response.status_code == 401 and attempt == 0 and self.connection is not None:
                continue  # the access token expired early: refresh it and try once more
            break
        if response.status_code == 401:
            raise ReconnectNeeded("Reconnect Google to sync this source.", f"{what}: {response.text[:300]}")
        if response.status_code == 403 and _reasons(response) & QUOTA_REASONS:
            # Google's quota errors are 403s with a reason; they are a rate limit, not a refusal.
            response = httpx.Response(
                429, headers=response.headers, content=response.content, request=request
            )
        try:
            raise_for_common(response, what=what, gone_on=(403, 404))
        except ProviderRateLimited as exc:
            if self.connection is not None:
                pause_connection(self.connection.id, exc.retry_after_s)
            raise
        return response.text if raw else json_of(response, what=what)

    def about(self) -> dict:
        return self.call("/drive/v3/about", params={"fields": "user(displayName,emailAddress,permissionId)"})

    def list_files(self, *, query: str, cursor: str | None = None) -> dict:
        """One page of files.list: {files, nextPageToken}."""
        params = {
            "q": query,
            "pageSize": PAGE_SIZE,
            "fields": f"nextPageToken,files({FILE_FIELDS})",
            "orderBy": "modifiedTime desc",
            "supportsAllDrives": "true",
            "includeItemsFromAllDrives": "true",
        }
        if cursor:
            params["pageToken"] = cursor
        return self.call("/drive/v3/files", params=params)

    def list_all(self, *, query: str) -> Iterator[dict]:
        cursor = None
        while True:
            answer = self.list_files(query=query, cursor=cursor)
            yield from answer.get("files", [])
            cursor = answer.get("nextPageToken")
            if not cursor:
                return

    def file(self, file_id: str) -> dict:
        """A file's metadata; ObjectGone when it is trashed (the evidence: `trashed: true`) or answers
        404/403 (deleted, or no longer shared with the account)."""
        found = self.call(
            f"/drive/v3/files/{file_id}", params={"fields": FILE_FIELDS, "supportsAllDrives": "true"}
        )
        if found.get("trashed"):
            raise ObjectGone("This document was deleted in Google Drive.", f"file {file_id} trashed")
        return found

    def target(self, found: dict) -> dict:
        """What a file stands for: a shortcut's target (its own metadata), any other file itself."""
        if found.get("mimeType") != SHORTCUT_MIME:
            return found
        target_id = (found.get("shortcutDetails") or {}).get("targetId")
        if not target_id:
            raise ObjectGone("This shortcut points nowhere.", f"shortcut {found.get('id')} has no target")
        return self.file(target_id)

    def export_text(self, file_id: str) -> str:
        return self.call(f"/drive/v3/files/{file_id}/export", params={"mimeType": "text/plain"}, raw=True)
