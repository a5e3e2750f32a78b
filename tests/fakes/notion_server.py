"""A fake Notion API on 127.0.0.1 with payloads shaped like developers.notion.com documents them
(Notion-Version 2022-06-28): OAuth (consent page, token, revoke), /v1/search, pages, databases and their
query, blocks and block children, each list with `has_more`/`next_cursor` pagination (a small page size
forces several pages). Parents as documented: a page or database sits in a page (`page_id`), a database
(`database_id`), a block (`block_id`: a toggle, a column ...) or the workspace; a block in a page or a
block; a page made in a page or block shows there as a child_page block (`has_children` on its block),
and is shared through what it sits in. last_edited_time is rounded down to the minute, as Notion does.
Faults are scripted: `fail_next` answers 5xx, `rate_limit_next` 429 with Retry-After."""

from __future__ import annotations

import base64
import html
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlencode

from tests.fakes.provider_http import Answer, Request

CLIENT_ID, CLIENT_SECRET = "notion-test-client", "notion-test-secret"


def rt(text: str, *, href: str | None = None) -> dict:
    """A rich-text item of type text."""
    return {
        "type": "text",
        "text": {"content": text, "link": {"url": href} if href else None},
        "annotations": {"bold": False, "italic": False, "code": False, "color": "default"},
        "plain_text": text,
        "href": href,
    }


def link_mention(href: str, title: str) -> dict:
    return {
        "type": "mention",
        "mention": {"type": "link_mention", "link_mention": {"href": href, "title": title}},
        "plain_text": href,
        "href": href,
    }


def new_id() -> str:
    return str(uuid.uuid4())


def block(kind: str, text: str = "", *, children: list[dict] | None = None, **body: object) -> dict:
    """A block; `children` are kept by the server under this block's id."""
    content: dict = {"rich_text": [rt(text)], "color": "default", **body} if text else dict(body)
    return {
        "object": "block",
        "id": new_id(),
        "type": kind,
        "has_children": bool(children),
        "archived": False,
        "created_time": "2026-01-05T10:00:00.000Z",
        "last_edited_time": "2026-01-05T10:00:00.000Z",
        kind: content,
        "_children": children or [],
    }


def _stamp(n: int) -> str:
    return f"2026-02-{1 + n // 1440:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00.000Z"


def minute_of(moment: datetime) -> str:
    """A time as Notion shows last_edited_time: rounded down to the minute."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:00.000Z")


@dataclass
class FakeNotion:
    base_url: str = ""
    page_size: int = 2
    objects: dict[str, dict] = field(default_factory=dict)  # pages and databases by id
    children: dict[str, list[dict]] = field(default_factory=dict)  # block or page id -> blocks
    blocks: dict[str, dict] = field(default_factory=dict)  # every block by id, with its `parent`
    shared: set[str] = field(default_factory=set)  # ids the integration may see
    # Notion's search index lags behind edits: these exist (GET answers) but search doesn't list them yet.
    not_indexed_yet: set[str] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    codes: dict[str, str] = field(default_factory=dict)  # code -> redirect_uri
    revoked: list[str] = field(default_factory=list)
    fail_next: int = 0
    rate_limit_next: int = 0
    retry_after: str = "1"
    requests: list[tuple[str, str]] = field(default_factory=list)
    # last_edited_time comes from a clock of whole minutes long past, one minute on per edit (edits that
    # settled long before any sync), unless `this_minute()` pins every stamp to the current minute.
    clock: int = 0
    pinned_minute: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        self.objects.clear()
        self.children.clear()
        self.blocks.clear()
        self.shared.clear()
        self.not_indexed_yet.clear()
        self.tokens.clear()
        self.refresh_tokens.clear()
        self.codes.clear()
        self.revoked.clear()
        self.requests.clear()
        self.fail_next = self.rate_limit_next = 0
        self.pinned_minute = None

    # --- building a workspace ------------------------------------------------------------------------

    def _tick(self) -> str:
        self.clock += 1
        return self.pinned_minute or _stamp(self.clock)

    def this_minute(self) -> str:
        """From now on, edits are made in the current minute (real time), as Notion stamps them."""
        self.pinned_minute = minute_of(datetime.now(UTC))
        return self.pinned_minute

    def _parent_ref(self, parent_id: str) -> dict:
        """A block's parent as Notion gives it: the page for a page's own blocks, else the block."""
        if parent_id in self.objects:
            return {"type": "page_id", "page_id": parent_id}
        return {"type": "block_id", "block_id": parent_id}

    def _keep_children(self, parent_id: str, blocks: list[dict]) -> None:
        kept = []
        for b in blocks:
            nested = b.pop("_children", [])
            b["parent"] = self._parent_ref(parent_id)
            self.blocks[b["id"]] = b
            kept.append(b)
            if nested:
                self._keep_children(b["id"], nested)
        self.children[parent_id] = kept

    def _show_in_parent(self, parent: str, parent_type: str, kind: str, object_id: str, title: str) -> None:
        """A page or database made in a page or a block shows there as a child_page (child_database)
        block with the same id, as in Notion; the block holding it now has children."""
        if parent_type not in ("page_id", "block_id"):
            return
        shown = {**block(kind, title=title), "id": object_id, "has_children": False}
        shown.pop("_children", None)
        shown["parent"] = self._parent_ref(parent)
        self.children.setdefault(parent, []).append(shown)
        self.blocks[object_id] = shown
        if parent_type == "block_id":
            self.blocks[parent]["has_children"] = True

    def add_page(
        self,
        title: str,
        blocks: list[dict],
        *,
        parent: str | None = None,
        parent_type: str = "page_id",
        properties: dict | None = None,
        shared: bool = True,
    ) -> str:
        page_id = new_id()
        props = {"title": {"id": "title", "type": "title", "title": [rt(title)]}}
        if properties:
            props = {"Name": {"id": "title", "type": "title", "title": [rt(title)]}, **properties}
        self.objects[page_id] = {
            "object": "page",
            "id": page_id,
            "created_time": "2026-01-05T10:00:00.000Z",
            "last_edited_time": self._tick(),
            "archived": False,
            "in_trash": False,
            "parent": {"type": parent_type, parent_type: parent}
            if parent
            else {"type": "workspace", "workspace": True},
            "properties": props,
            "url": f"https://www.notion.so/{title.replace(' ', '-')}-{page_id.replace('-', '')}",
        }
        self._keep_children(page_id, blocks)
        if parent:
            self._show_in_parent(parent, parent_type, "child_page", page_id, title)
        if shared:
            self.shared.add(page_id)
        return page_id

    def add_database(
        self,
        title: str,
        schema: dict,
        *,
        parent: str | None = None,
        parent_type: str = "page_id",
        shared: bool = True,
    ) -> str:
        database_id = new_id()
        self.objects[database_id] = {
            "object": "database",
            "id": database_id,
            "title": [rt(title)],
            "last_edited_time": self._tick(),
            "archived": False,
            "in_trash": False,
            "parent": {"type": parent_type, parent_type: parent}
            if parent
            else {"type": "workspace", "workspace": True},
            "properties": schema,
            "url": f"https://www.notion.so/{database_id.replace('-', '')}",
        }
        if parent:
            self._show_in_parent(parent, parent_type, "child_database", database_id, title)
        if shared:
            self.shared.add(database_id)
        return database_id

    def edit_page(self, page_id: str, blocks: list[dict]) -> None:
        self._keep_children(page_id, blocks)
        self.objects[page_id]["last_edited_time"] = self._tick()

    def rename(self, page_id: str, title: str) -> None:
        for prop in self.objects[page_id]["properties"].values():
            if prop["type"] == "title":
                prop["title"] = [rt(title)]
        self.objects[page_id]["last_edited_time"] = self._tick()

    def archive(self, page_id: str) -> None:
        self.objects[page_id]["archived"] = self.objects[page_id]["in_trash"] = True
        self.objects[page_id]["last_edited_time"] = self._tick()

    def unshare(self, object_id: str) -> None:
        self.shared.discard(object_id)

    def issue_token(self) -> str:
        token = "secret_" + secrets.token_hex(16)
        self.tokens.add(token)
        return token

    # --- the API ------------------------------------------------------------------------------------------

    def route(self, request: Request) -> Answer:
        with self.lock:
            self.requests.append((request.method, request.path))
            if request.path.startswith("/v1/oauth/"):
                return self._oauth(request)
            if self.rate_limit_next:
                self.rate_limit_next -= 1
                return Answer(
                    429, _error(429, "rate_limited", "Rate limited"), {"Retry-After": self.retry_after}
                )
            if self.fail_next:
                self.fail_next -= 1
                return Answer(502, _error(502, "service_unavailable", "Notion is unavailable"))
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.tokens:
                return Answer(401, _error(401, "unauthorized", "API token is invalid."))
            if request.headers.get("notion-version") != "2022-06-28":
                return Answer(400, _error(400, "missing_version", "Notion-Version header failed validation"))
            return self._api(request)

    def _visible(self, object_id: str) -> dict | None:
        """The page, database or block if the integration may see it: shared itself, or through what it
        sits in (rows through their database, child pages through their page, blocks included)."""
        obj = self.objects.get(object_id) or self.blocks.get(object_id)
        seen, current = set(), object_id
        while current and current not in seen:
            if current in self.shared:
                return obj
            seen.add(current)
            # A page's own entry says where it sits; its child_page block (same id) says the same.
            here = self.objects.get(current) or self.blocks.get(current)
            parent = here["parent"] if here else {"type": "workspace"}
            current = parent.get(parent["type"]) if parent["type"] != "workspace" else None
        return None

    def _api(self, request: Request) -> Answer:
        parts = request.path.strip("/").split("/")
        if request.path == "/v1/search" and request.method == "POST":
            body = request.json()
            wanted = (body.get("filter") or {}).get("value")
            query = (body.get("query") or "").lower()
            found = [
                o
                for o in self.objects.values()
                if self._visible(o["id"])
                and o["id"] not in self.not_indexed_yet
                and (not wanted or o["object"] == wanted)
                and query in _title(o).lower()
            ]
            return Answer(200, self._paged(found, body.get("start_cursor"), "page_or_database"))
        if len(parts) == 3 and parts[1] in ("pages", "databases") and request.method == "GET":
            obj = self._visible(parts[2])
            if obj is None or obj["object"] != parts[1][:-1]:
                return Answer(404, _not_found(parts[2]))
            return Answer(200, obj)
        if len(parts) == 4 and parts[1] == "databases" and parts[3] == "query":
            if self._visible(parts[2]) is None:
                return Answer(404, _not_found(parts[2]))
            rows = [
                o
                for o in self.objects.values()
                if o["parent"].get("database_id") == parts[2] and not o["archived"]
            ]
            return Answer(200, self._paged(rows, request.json().get("start_cursor"), "page_or_database"))
        if len(parts) == 3 and parts[1] == "blocks" and request.method == "GET":
            # Retrieve a block: a page's id answers as its child_page block.
            found = self._visible(parts[2])
            if found is None:
                return Answer(404, _not_found(parts[2]))
            if found.get("object") == "block":
                return Answer(200, found)
            shown = block("child_page", title=_title(found))
            shown.pop("_children")
            shown.update(
                id=found["id"], parent=found["parent"], has_children=True, archived=found["archived"]
            )
            return Answer(200, shown)
        if len(parts) == 4 and parts[1] == "blocks" and parts[3] == "children":
            owner = parts[2]
            if self._visible(owner) is None:
                return Answer(404, _not_found(owner))
            return Answer(
                200, self._paged(self.children.get(owner, []), request.query.get("start_cursor"), "block")
            )
        return Answer(400, _error(400, "invalid_request_url", f"Invalid request URL {request.path}"))

    def _paged(self, items: list[dict], cursor: str | None, kind: str) -> dict:
        start = int(cursor) if cursor else 0
        page = items[start : start + self.page_size]
        more = start + self.page_size < len(items)
        return {
            "object": "list",
            "results": page,
            "next_cursor": str(start + self.page_size) if more else None,
            "has_more": more,
            "type": kind,
            kind: {},
        }

    # --- OAuth ---------------------------------------------------------------------------------------------

    def _oauth(self, request: Request) -> Answer:
        if request.path == "/v1/oauth/authorize":
            q = request.query
            allow = (
                q["redirect_uri"]
                + "?"
                + urlencode({"code": self._code(q["redirect_uri"]), "state": q["state"]})
            )
            deny = q["redirect_uri"] + "?" + urlencode({"error": "access_denied", "state": q["state"]})
            page = (
                "<!doctype html><title>Notion</title><h1>Grounded wants to access your Notion workspace</h1>"
                f"<p>Client {html.escape(q.get('client_id', ''))}</p>"
                f'<a id="allow" href="{html.escape(allow)}">Allow access</a> '
                f'<a id="deny" href="{html.escape(deny)}">Cancel</a>'
            )
            return Answer(200, page)
        basic = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if request.headers.get("authorization") != basic:
            return Answer(401, {"error": "invalid_client"})
        body = request.json()
        if request.path == "/v1/oauth/token" and body.get("grant_type") == "refresh_token":
            if body.get("refresh_token") not in self.refresh_tokens:
                return Answer(400, {"error": "invalid_grant", "error_description": "Invalid refresh token."})
            return Answer(
                200, {"access_token": self.issue_token(), "token_type": "bearer", "bot_id": "bot-7f3a"}
            )
        if request.path == "/v1/oauth/token":
            if self.codes.pop(body.get("code", ""), None) != body.get("redirect_uri"):
                return Answer(400, {"error": "invalid_grant", "error_description": "Invalid code."})
            return Answer(
                200,
                {
                    "access_token": self.issue_token(),
                    "token_type": "bearer",
                    "bot_id": "bot-7f3a",
                    "workspace_id": "ws-acme",
                    "workspace_name": "Acme Handbook",
                    "workspace_icon": None,
                    "owner": {
                        "type": "user",
                        "user": {
                            "object": "user",
                            "id": "u-1",
                            "name": "Ada Admin",
                            "person": {"email": "ada@acme.test"},
                        },
                    },
                    "duplicated_template_id": None,
                },
            )
        if request.path == "/v1/oauth/revoke":
            self.tokens.discard(body.get("token", ""))
            self.revoked.append(body.get("token", ""))
            return Answer(200, {})
        return Answer(404, _error(404, "object_not_found", "no such endpoint"))

    def _code(self, redirect_uri: str) -> str:
        code = secrets.token_urlsafe(12)
        self.codes[code] = redirect_uri
        return code


def _title(obj: dict) -> str:
    if obj["object"] == "database":
        return "".join(t["plain_text"] for t in obj["title"])
    for prop in obj["properties"].values():
        if prop["type"] == "title":
            return "".join(t["plain_text"] for t in prop["title"])
    return ""


def _error(status: int, code: str, message: str) -> dict:
    return {"object": "error", "status": status, "code": code, "message": message}


def _not_found(object_id: str) -> dict:
    return _error(
        404,
        "object_not_found",
        f"Could not find page with ID: {object_id}. Make sure the relevant pages and databases are shared "
        "with your integration.",
    )
