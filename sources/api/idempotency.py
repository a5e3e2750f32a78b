"""`Idempotency-Key` for POSTs: a client that retries a request (a time-out, a lost connection) with the same
key gets the first answer again instead of a second source, batch or reindex.

The first request with a key claims it in Redis (SET NX) for the workspace; its answer (anything below 500)
is kept for IDEMPOTENCY_TTL_SECONDS (24 h) and replayed with `Idempotent-Replayed: true`. A 5xx releases the
key, so a retry does the work. The same key with another body is refused (422), and a retry that arrives
while the first is still running is told so (409): it must not run the work a second time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.conf import settings
from django.http.request import RawPostDataException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from sources.api.errors import ApiError
from sources.api.throttling import redis_client

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255
#: Bodies up to this size are part of the fingerprint; larger ones (file uploads) by length and type.
FINGERPRINT_BODY_BYTES = 1_000_000


class IdempotentReplay(Exception):
    """Raised from the view's `initial` to answer with the stored response (the handler never runs)."""

    def __init__(self, response: Response) -> None:
        super().__init__("replayed")
        self.response = response


@dataclass(frozen=True)
class Claim:
    redis_key: str
    fingerprint: str


def _fingerprint(request: Request) -> str:
    digest = hashlib.sha256(f"{request.method} {request.path}\n".encode())
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    body = b""
    if length <= FINGERPRINT_BODY_BYTES:
        try:
            body = request._request.body
        except RawPostDataException:  # read as a form already (multipart): length and type stand in
            body = b""
    digest.update(body or f"{length}:{request.content_type}".encode())
    return digest.hexdigest()


def claim(request: Request, workspace_id: int) -> Claim | None:
    """Claim the request's key, or raise IdempotentReplay / ApiError; None without a key or for reads."""
    key = request.headers.get(HEADER, "")
    if request.method != "POST" or not key:
        return None
    if len(key) > MAX_KEY_CHARS:
        message = f"An {HEADER} is at most {MAX_KEY_CHARS} characters; this one has {len(key):,}."
        raise ApiError(400, "invalid", message, fields={HEADER: [message]})
    redis_key = (
        f"{settings.REDIS_KEY_PREFIX}idempotency:{workspace_id}:{hashlib.sha256(key.encode()).hexdigest()}"
    )
    fingerprint = _fingerprint(request)
    pending = json.dumps({"state": "pending", "fingerprint": fingerprint})
    ttl = int(settings.IDEMPOTENCY_TTL_SECONDS)
    if redis_client().set(redis_key, pending, nx=True, ex=ttl):
        return Claim(redis_key=redis_key, fingerprint=fingerprint)
    stored = json.loads(redis_client().get(redis_key) or "{}")
    if stored.get("fingerprint") != fingerprint:
        raise ApiError(
            422,
            "idempotency_key_reused",
            f"This {HEADER} was used for another request in the last 24 hours; use a new key.",
        )
    if stored.get("state") != "done":
        raise ApiError(
            409,
            "idempotency_in_progress",
            f"A request with this {HEADER} is still being processed; retry in a moment.",
        )
    response = Response(stored["body"], status=stored["status"])
    response["Idempotent-Replayed"] = "true"
    raise IdempotentReplay(response)


def finish(claim: Claim, response: Response) -> None:
    """Keep the answer for replays, or release the key after a server error so a retry does the work."""
    if response.status_code >= 500 or not isinstance(response, Response):
        redis_client().delete(claim.redis_key)
        return
    done = {
        "state": "done",
        "fingerprint": claim.fingerprint,
        "status": response.status_code,
        "body": json.loads(json.dumps(response.data, cls=JSONEncoder)) if response.data is not None else None,
    }
    redis_client().set(claim.redis_key, json.dumps(done), ex=int(settings.IDEMPOTENCY_TTL_SECONDS))
