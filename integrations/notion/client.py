"""Notion's REST API (https://developers.notion.com/reference), called with httpx.

Why not the notion-client SDK: it can be pointed at a base URL, but it hides the response headers
(Retry-After) inside its exception and adds its own retries on top of ours; the connector needs the
shared per-connection rate (integrations/http.py) on every call and its own failure classes. The calls
used are few and documented: search, pages, databases/query, blocks and blocks/children.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from django.conf import settings

from integrations.connections import fresh_access_token, refresh_token
from integrations.errors import ObjectGone, ProviderRateLimited, ReconnectNeeded
from integrations.http import json_of, pause_connection, raise_for_common, send, wait_for_turn
from integrations.models import Connection, Provider

log = logging.getLogger(__name__)

PAGE_SIZE = 100
# A paginated list is read up to this many pages (of PAGE_SIZE): 50,000 pages shared with the integration.
MAX_LIST_PAGES = 500


class NotionClient:
    def __init__(self, connection: Connection) -> None:
        if connection.provider != Provider.NOTION:
            raise ValueError(f"connection {connection.id} is not a Notion connection")
        self.connection = connection
        self.base_url = settings.NOTION_API_BASE_URL.rstrip("/")

    def call(self, method: str, path: str, *, json: dict | None = None, params: dict | None = None) -> Any:
        if not self.connection.access_token:
            raise ReconnectNeeded("Reconnect Notion to sync this source.", "no token (disconnected)")
        what = f"Notion {method} {path}"
        for attempt in (0, 1):
            wait_for_turn(self.connection.id, settings.NOTION_REQUESTS_PER_SECOND)
            # Notion's older tokens never expire; newer ones come with a refresh token and an expiry.
            token = refresh_token(self.connection) if attempt else fresh_access_token(self.connection)
            request = httpx.Request(
                method,
                f"{self.base_url}{path}",
                json=json,
                params=params,
                headers={"Authorization": f"Bearer {token}", "Notion-Version": settings.NOTION_VERSION},
            )
            response = send(request, what=what)
            if response.status_code != 401 or attempt or not self.connection.refresh_token:
                break
        if response.status_code == 401:
            # `unauthorized`: the integration's token was revoked (or the workspace removed it).
            raise ReconnectNeeded("Reconnect Notion to sync this source.", f"{what}: {response.text[:300]}")
        try:
            # 403 `restricted_resource` and 404 `object_not_found`: not shared with the integration anymore.
            raise_for_common(response, what=what, gone_on=(403, 404))
        except ProviderRateLimited as exc:
            pause_connection(self.connection.id, exc.retry_after_s)
            raise
        return json_of(response, what=what)

    # --- listings ---------------------------------------------------------------------------------------

    def search(self, *, query: str = "", cursor: str | None = None, object_type: str | None = None) -> dict:
        """One page of /v1/search: {results, next_cursor, has_more}."""
        body: dict[str, Any] = {"page_size": PAGE_SIZE}
        if query:
            body["query"] = query
        if cursor:
            body["start_cursor"] = cursor
        if object_type:
            body["filter"] = {"property": "object", "value": object_type}
        return self.call("POST", "/v1/search", json=body)

    def search_all(self, *, object_type: str | None = None) -> Iterator[dict]:
        return self._every(lambda cursor: self.search(cursor=cursor, object_type=object_type), "search")

    def database_rows(self, database_id: str) -> Iterator[dict]:
        """Every row (page) of a database, through /v1/databases/{id}/query's cursor."""

        def ask(cursor: str | None) -> dict:
            body: dict[str, Any] = {"page_size": PAGE_SIZE}
            if cursor:
                body["start_cursor"] = cursor
            return self.call("POST", f"/v1/databases/{database_id}/query", json=body)

        return self._every(ask, f"database {database_id}")

    def _every(self, ask: Callable[[str | None], dict], what: str) -> Iterator[dict]:
        """The results of every page of a paginated list (`has_more`/`next_cursor`), up to MAX_LIST_PAGES
        pages; a cursor seen before ends it too. A listing that stopped early is logged: what it did not
        see is kept while it exists (NotionKind.listing)."""
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            answer = ask(cursor)
            yield from answer.get("results", [])
            cursor = answer.get("next_cursor")
            if not answer.get("has_more") or not cursor or cursor in seen:
                return
            seen.add(cursor)
        log.warning("Notion %s stopped after %s pages of results", what, MAX_LIST_PAGES)

    # --- objects ----------------------------------------------------------------------------------------

    def page(self, page_id: str) -> dict:
        """A page; ObjectGone when it is not shared anymore or in the trash (archived)."""
        page = self.call("GET", f"/v1/pages/{page_id}")
        if page.get("archived") or page.get("in_trash"):
            raise ObjectGone("This page was deleted in Notion.", f"page {page_id} archived")
        return page

    def database(self, database_id: str) -> dict:
        database = self.call("GET", f"/v1/databases/{database_id}")
        if database.get("archived") or database.get("in_trash"):
            raise ObjectGone("This database was deleted in Notion.", f"database {database_id} archived")
        return database

    def block(self, block_id: str) -> dict:
        """One block (GET /v1/blocks/{id}), with its `parent`; ObjectGone when not shared or deleted."""
        return self.call("GET", f"/v1/blocks/{block_id}")

    def block_children(self, block_id: str) -> list[dict]:
        """Every child of a block or page, through the cursor of /v1/blocks/{id}/children."""

        def ask(cursor: str | None) -> dict:
            params: dict[str, Any] = {"page_size": PAGE_SIZE}
            if cursor:
                params["start_cursor"] = cursor
            return self.call("GET", f"/v1/blocks/{block_id}/children", params=params)

        return list(self._every(ask, f"block {block_id}'s children"))
