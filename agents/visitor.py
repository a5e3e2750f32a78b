"""Signed visitor tokens: the host site vouches for its visitor and what they may see.

token = base64url(json payload) "." base64url(HMAC-SHA256(workspace.visitor_secret, first part)).
The payload carries `sub` (the visitor's id on the host site), `aud` (audience tokens, such as
"role:admin") and `exp` (a Unix time). Host sites sign it server-side; the browser only carries it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field


class VisitorTokenError(ValueError):
    pass


@dataclass(frozen=True)
class Visitor:
    user_id: str = ""
    audiences: list[str] = field(default_factory=list)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(secret: str, *, user_id: str, audiences: list[str], ttl_s: int = 3600) -> str:
    payload = _b64(json.dumps({"sub": user_id, "aud": audiences, "exp": int(time.time()) + ttl_s}).encode())
    signature = _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())
    return f"{payload}.{signature}"


def verify(secret: str, token: str, *, now: float | None = None) -> Visitor:
    try:
        payload, signature = token.split(".")
        expected = _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())
    except ValueError as exc:
        raise VisitorTokenError("The visitor token is malformed.") from exc
    if not hmac.compare_digest(signature, expected):
        raise VisitorTokenError("The visitor token's signature is not valid.")
    try:
        claims = json.loads(_unb64(payload))
        expires = float(claims["exp"])
        audiences = [str(a) for a in claims.get("aud", [])]
        user_id = str(claims.get("sub", ""))
    except (ValueError, KeyError, TypeError) as exc:
        raise VisitorTokenError("The visitor token's payload is unreadable.") from exc
    if expires < (time.time() if now is None else now):
        raise VisitorTokenError("The visitor token has expired.")
    return Visitor(user_id=user_id, audiences=audiences)
