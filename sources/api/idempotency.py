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
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from sources.api.errors import ApiError
from sources.api.throttling import redis_client

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255


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
    """The request as a retry would repeat it: method, path and the whole body. A multipart upload is
    parsed as the view will parse it (its files land in temporary files, not in memory), and its fields
    and its files' contents stand in for the body."""
    digest = hashlib.sha256(f"{request.method} {request.path}\n".encode())
    if not request.content_type.startswith("multipart/"):
        digest.update(request._request.body)
        return digest.hexdigest()
    request.data  # noqa: B018  (parsed once; the view reuses it)
    for name, values in sorted(request._request.POST.lists()):
        digest.update(json.dumps([name, values]).encode())
    for name, uploads in sorted(request._request.FILES.lists()):
        for upload in uploads:
            digest.update(f"{name}:{upload.name}:{upload.size}\n".encode())
            for chunk in upload.chunks():
                digest.update(chunk)
            upload.seek(0)  # the view reads it next
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
