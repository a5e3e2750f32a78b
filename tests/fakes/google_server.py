"""A fake Google (OAuth 2 and Drive API v3) on 127.0.0.1, with payloads shaped like Google documents them:
the consent page, /token (authorization_code with PKCE S256, refresh_token, invalid_grant), /revoke,
drive/v3 about, files.list (its `q` language for the clauses the connector sends, `nextPageToken`),
files.get, files.export as text/plain. Answers hold only the `fields` asked for (Drive's defaults
otherwise); files carry `parents`, `trashed` (a trashed file keeps answering files.get, with trashed:
true), `version` (one more on every change, a move included) and `modifiedTime` with milliseconds;
shortcuts (application/vnd.google-apps.shortcut) carry `shortcutDetails` (targetId, targetMimeType).
Faults: `fail_next` (503), `quota_next` (403 userRateLimitExceeded), `expire_tokens()` (every access
token answers 401 until refreshed)."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from tests.fakes.provider_http import Answer, Request

CLIENT_ID = "google-test-client.apps.googleusercontent.com"
CLIENT_SECRET = "google-test-secret"
DOC = "application/vnd.google-apps.document"
FOLDER = "application/vnd.google-apps.folder"
SHORTCUT = "application/vnd.google-apps.shortcut"
# What Drive answers when a request names no `fields`.
DEFAULT_LIST_FIELDS = "kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)"
DEFAULT_FILE_FIELDS = "kind,id,name,mimeType"


def _error(code: int, reason: str, message: str, status: str) -> dict:
    return {
        "error": {
            "code": code,
            "message": message,
            "errors": [{"message": message, "domain": "global", "reason": reason}],
            "status": status,
        }
    }


@dataclass
class FakeGoogle:
    base_url: str = ""
    page_size: int = 2
    files: dict[str, dict] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    access_tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (redirect_uri, challenge)
    refreshed: int = 0
    fail_next: int = 0
    quota_next: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    clock: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        for store in (self.files, self.texts, self.codes):
            store.clear()
        self.access_tokens.clear()
        self.refresh_tokens.clear()
        self.requests.clear()
        self.refreshed = self.fail_next = self.quota_next = 0

    # --- building a Drive ---------------------------------------------------------------------------

    def _stamp(self) -> str:
        """modifiedTime as Drive gives it: RFC 3339 with milliseconds (each edit 1.234 s after the last)."""
        self.clock += 1
        moment = datetime(2026, 3, 1, 10, tzinfo=UTC) + timedelta(milliseconds=1234 * self.clock)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def add_folder(self, name: str) -> str:
        folder_id = "fo" + secrets.token_hex(8)
        self.files[folder_id] = {
            "kind": "drive#file",
            "id": folder_id,
            "name": name,
            "mimeType": FOLDER,
            "modifiedTime": self._stamp(),
            "version": "1",
            "webViewLink": f"https://drive.google.com/drive/folders/{folder_id}",
            "parents": ["root"],
            "trashed": False,
        }
        return folder_id

    def add_doc(self, name: str, text: str, *, folder: str = "root") -> str:
        doc_id = "1" + secrets.token_hex(12)
        self.files[doc_id] = {
            "kind": "drive#file",
            "id": doc_id,
            "name": name,
            "mimeType": DOC,
            "modifiedTime": self._stamp(),
            "version": "3",
            "webViewLink": f"https://docs.google.com/document/d/{doc_id}/edit?usp=drivesdk",
            "parents": [folder],
            "trashed": False,
        }
        self.texts[doc_id] = text
        return doc_id

    def add_shortcut(self, name: str, target: str, *, folder: str = "root") -> str:
        """A shortcut (files.create with shortcutDetails.targetId): its own id, name and parents."""
        shortcut_id = "sc" + secrets.token_hex(8)
        self.files[shortcut_id] = {
            "kind": "drive#file",
            "id": shortcut_id,
            "name": name,
            "mimeType": SHORTCUT,
            "modifiedTime": self._stamp(),
            "version": "1",
            "webViewLink": f"https://drive.google.com/file/d/{shortcut_id}/view?usp=drivesdk",
            "parents": [folder],
            "trashed": False,
            "shortcutDetails": {"targetId": target, "targetMimeType": self.files[target]["mimeType"]},
        }
        return shortcut_id

    def edit_doc(self, doc_id: str, text: str) -> None:
        self.texts[doc_id] = text
        found = self.files[doc_id]
        found.update(modifiedTime=self._stamp(), version=str(int(found["version"]) + 1))

    def move(self, file_id: str, folder: str) -> None:
        """files.update with addParents/removeParents: a new parent, a new version, the same modifiedTime."""
        found = self.files[file_id]
        found.update(parents=[folder], version=str(int(found["version"]) + 1))

    def trash(self, file_id: str) -> None:
        found = self.files[file_id]
        found.update(trashed=True, version=str(int(found["version"]) + 1))

    def restore(self, file_id: str) -> None:
        found = self.files[file_id]
        found.update(trashed=False, version=str(int(found["version"]) + 1))

    def issue_tokens(self) -> tuple[str, str]:
        access, refresh = "ya29." + secrets.token_urlsafe(16), "1//" + secrets.token_urlsafe(16)
        self.access_tokens.add(access)
        self.refresh_tokens.add(refresh)
        return access, refresh

    def expire_tokens(self) -> None:
        self.access_tokens.clear()

    # --- the API --------------------------------------------------------------------------------------

    def route(self, request: Request) -> Answer:
        with self.lock:
            self.requests.append((request.method, request.path))
            if request.path == "/o/oauth2/v2/auth":
                return self._consent(request)
            if request.path == "/token":
                return self._token(request.form())
            if request.path == "/revoke":
                token = request.form().get("token", "")
                self.refresh_tokens.discard(token)
                self.access_tokens.discard(token)
                return Answer(200, {})
            if self.fail_next:
                self.fail_next -= 1
                return Answer(503, _error(503, "backendError", "Backend Error", "UNAVAILABLE"))
            if self.quota_next:
                self.quota_next -= 1
                return Answer(
                    403,
                    _error(403, "userRateLimitExceeded", "User Rate Limit Exceeded", "PERMISSION_DENIED"),
                    {"Retry-After": "1"},
                )
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.access_tokens:
                return Answer(
                    401,
                    _error(
                        401, "authError", "Request had invalid authentication credentials.", "UNAUTHENTICATED"
                    ),
                )
            return self._drive(request)

    def _drive(self, request: Request) -> Answer:
        parts = request.path.strip("/").split("/")
        if request.path == "/drive/v3/about":
            return self._fields(
                request,
                "user",
                {
                    "user": {
                        "kind": "drive#user",
                        "displayName": "Ada Admin",
                        "emailAddress": "ada@acme.test",
                        "permissionId": "0471-ada",
                        "me": True,
                    }
                },
            )
        if request.path == "/drive/v3/files":
            matches = [f for f in self.files.values() if _matches(f, request.query.get("q", ""))]
            start = int(request.query.get("pageToken") or 0)
            page = matches[start : start + self.page_size]
            body: dict = {"kind": "drive#fileList", "incompleteSearch": False, "files": page}
            if start + self.page_size < len(matches):
                body["nextPageToken"] = str(start + self.page_size)
            return self._fields(request, DEFAULT_LIST_FIELDS, body)
        if len(parts) >= 4 and parts[:3] == ["drive", "v3", "files"]:
            found = self.files.get(parts[3])
            if found is None:
                message = f"File not found: {parts[3]}."
                return Answer(404, _error(404, "notFound", message, "NOT_FOUND"))
            if len(parts) == 5 and parts[4] == "export":
                if request.query.get("mimeType") != "text/plain":
                    return Answer(400, _error(400, "badRequest", "Unsupported export", "INVALID_ARGUMENT"))
                if found["id"] not in self.texts:  # a folder, a shortcut: nothing to export
                    message = "Export only supports Docs Editors files."
                    return Answer(403, _error(403, "fileNotExportable", message, "PERMISSION_DENIED"))
                body = ("\ufeff" + self.texts[found["id"]].replace("\n", "\r\n")).encode()
                return Answer(200, body, {"Content-Type": "text/plain; charset=utf-8"})
            return self._fields(request, DEFAULT_FILE_FIELDS, found)
        return Answer(404, _error(404, "notFound", "Not Found", "NOT_FOUND"))

    def _fields(self, request: Request, default: str, body: dict) -> Answer:
        """Only the fields the request asks for (`fields`, a partial response), as Drive answers."""
        return Answer(200, partial(body, request.query.get("fields") or default))

    # --- OAuth --------------------------------------------------------------------------------------------

    def _consent(self, request: Request) -> Answer:
        q = request.query
        code = secrets.token_urlsafe(12)
        self.codes[code] = (q["redirect_uri"], q.get("code_challenge", ""))
        allow = (
            q["redirect_uri"]
            + "?"
            + urlencode({"state": q["state"], "code": code, "scope": q.get("scope", "")})
        )
        deny = q["redirect_uri"] + "?" + urlencode({"state": q["state"], "error": "access_denied"})
        page = (
            "<!doctype html><title>Sign in - Google Accounts</title>"
            "<h1>Grounded wants to access your Google Account</h1>"
            f"<p>{html.escape(q.get('scope', ''))}</p>"
            f'<a id="allow" href="{html.escape(allow)}">Allow</a> '
            f'<a id="deny" href="{html.escape(deny)}">Cancel</a>'
        )
        return Answer(200, page)

    def _token(self, form: dict[str, str]) -> Answer:
        if (form.get("client_id"), form.get("client_secret")) != (CLIENT_ID, CLIENT_SECRET):
            return Answer(401, {"error": "invalid_client", "error_description": "Unauthorized"})
        invalid = Answer(
            400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
        )
        if form.get("grant_type") == "authorization_code":
            redirect_uri, challenge = self.codes.pop(form.get("code", ""), ("", ""))
            verifier = form.get("code_verifier", "")
            computed = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            )
            if not redirect_uri or redirect_uri != form.get("redirect_uri") or computed != challenge:
                return Answer(400, {"error": "invalid_grant", "error_description": "Bad Request"})
            access, refresh = self.issue_tokens()
            return Answer(
                200,
                {
                    "access_token": access,
                    "expires_in": 3599,
                    "refresh_token": refresh,
                    "scope": "https://www.googleapis.com/auth/drive.readonly",
                    "token_type": "Bearer",
                },
            )
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return invalid
            self.refreshed += 1
            access = "ya29." + secrets.token_urlsafe(16)
            self.access_tokens.add(access)
            return Answer(
                200,
                {
                    "access_token": access,
                    "expires_in": 3599,
                    "scope": "https://www.googleapis.com/auth/drive.readonly",
                    "token_type": "Bearer",
                },
            )
        return Answer(400, {"error": "unsupported_grant_type"})


def _literals(clause: str) -> list[str]:
    return [m.replace("\\'", "'") for m in re.findall(r"'((?:[^'\\]|\\.)*)'", clause)]


def _matches(found: dict, query: str) -> bool:
    """The clauses the connector sends, joined by `and`: `'X' in parents`, `mimeType = 'M'` (or a
    parenthesised `or` of them), `trashed = false`, `name contains 'N'`."""
    for clause in re.split(r"\s+and\s+", query.strip()) if query.strip() else []:
        if " in parents" in clause:
            if _literals(clause)[0] not in found["parents"]:
                return False
        elif clause.startswith("(") or clause.startswith("mimeType"):
            if found["mimeType"] not in _literals(clause):
                return False
        elif clause.startswith("trashed"):
            if found["trashed"] != (clause.split("=")[1].strip() == "true"):
                return False
        elif clause.startswith("name contains"):
            if _literals(clause)[0].lower() not in found["name"].lower():
                return False
        else:
            raise AssertionError(f"the fake does not understand {clause!r}")
    return True


def _split_fields(spec: str) -> list[str]:
    """`a,b(c,d),e` -> ["a", "b(c,d)", "e"]: commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in spec:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    return [p for p in [*parts, current.strip()] if p]


def partial(value: object, spec: str) -> object:
    """A partial response (Drive's `fields`): `*`, names, `name(sub,fields)`, `a/b`; lists apply it to
    each of their items."""
    if isinstance(value, list):
        return [partial(item, spec) for item in value]
    if not isinstance(value, dict) or spec.strip() == "*":
        return value
    kept: dict = {}
    for part in _split_fields(spec):
        name, _, rest = part.partition("(")
        name, _, path = name.partition("/")
        sub = rest[:-1] if rest else path
        if name in value:
            kept[name] = partial(value[name], sub) if sub else value[name]
    return kept
