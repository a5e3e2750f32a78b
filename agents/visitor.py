"""Signed visitor tokens: the host site vouches for its visitor and what they may see.

token = base64url(json payload) "." base64url(HMAC-SHA256(workspace.visitor_secret, first part)).
The payload carries `sub` (the visitor's id on the host site), `aud` (audience tokens, such as
"role:admin"), `exp` (a Unix time) and optionally `passages` (true: the host vouches that this is one of its
signed-in staff, who may see the passages behind an answer and the gate's own search). Host sites sign it
server-side; the browser only carries it, so only a token the host signed can show passages.

A workspace's secret can be rotated: the old one keeps verifying tokens for VISITOR_SECRET_GRACE_SECONDS, so
a host site can deploy the new secret without its visitors' tokens failing in between.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sources.models import Workspace


class VisitorTokenError(ValueError):
    pass


class BadSignature(VisitorTokenError):
    """Not signed by this secret (perhaps by another of the workspace's secrets)."""


@dataclass(frozen=True)
class Visitor:
    user_id: str = ""
    audiences: list[str] = field(default_factory=list)
    #: The host's signed claim that this visitor may see passages; never true without a valid token.
    passages: bool = False


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(
    secret: str, *, user_id: str, audiences: list[str], ttl_s: int = 3600, passages: bool = False
) -> str:
    claims: dict = {"sub": user_id, "aud": audiences, "exp": int(time.time()) + ttl_s}
    if passages:
        claims["passages"] = True
    payload = _b64(json.dumps(claims).encode())
    signature = _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())
    return f"{payload}.{signature}"


def verify(secret: str, token: str, *, now: float | None = None) -> Visitor:
    try:
        payload, signature = token.split(".")
        expected = _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())
    except ValueError as exc:
        raise VisitorTokenError("The visitor token is malformed.") from exc
    if not hmac.compare_digest(signature, expected):
        raise BadSignature("The visitor token's signature is not valid.")
    try:
        claims = json.loads(_unb64(payload))
        expires = float(claims["exp"])
        audiences = [str(a) for a in claims.get("aud", [])]
        user_id = str(claims.get("sub", ""))
        # Only the JSON literal true counts: "yes", 1 or "false" do not show passages.
        passages = claims.get("passages") is True
    except (ValueError, KeyError, TypeError) as exc:
        raise VisitorTokenError("The visitor token's payload is unreadable.") from exc
    if expires < (time.time() if now is None else now):
        raise VisitorTokenError("The visitor token has expired.")
    return Visitor(user_id=user_id, audiences=audiences, passages=passages)


def verify_any(secrets: list[str], token: str, *, now: float | None = None) -> Visitor:
    """Verify against each secret in turn (the current one first); the first one's error if none signs it."""
    for secret in secrets:
        try:
            return verify(secret, token, now=now)
        except BadSignature:
            continue  # an expired or unreadable token signed by this secret is refused as it is
    raise BadSignature("The visitor token's signature is not valid.")


def workspace_secrets(workspace: Workspace) -> list[str]:
    """The secrets that verify this workspace's tokens now: the current one, and the previous one during
    its grace period."""
    from django.utils import timezone

    secrets = [workspace.visitor_secret]
    expires = workspace.previous_visitor_secret_expires_at
    if workspace.previous_visitor_secret and expires is not None and expires > timezone.now():
        secrets.append(workspace.previous_visitor_secret)
    return secrets


def rotate_visitor_secret(*, workspace: Workspace, grace_seconds: int | None = None) -> Workspace:
    """A new signing secret; the current one keeps verifying for the grace period (a second rotation within
    it ends the first one's grace: only one previous secret is kept)."""
    from django.conf import settings
    from django.utils import timezone

    from sources.models import Workspace as WorkspaceModel
    from sources.models import new_visitor_secret

    grace = settings.VISITOR_SECRET_GRACE_SECONDS if grace_seconds is None else grace_seconds
    workspace.previous_visitor_secret = workspace.visitor_secret
    workspace.previous_visitor_secret_expires_at = timezone.now() + timedelta(seconds=grace)
    workspace.visitor_secret = new_visitor_secret()
    WorkspaceModel.objects.filter(id=workspace.id).update(
        visitor_secret=workspace.visitor_secret,
        previous_visitor_secret=workspace.previous_visitor_secret,
        previous_visitor_secret_expires_at=workspace.previous_visitor_secret_expires_at,
    )
    return workspace
