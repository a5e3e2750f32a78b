"""Per-key throttling of the authenticated REST API, counted in Redis so every web process shares it.

A fixed window per caller (an API key, or a signed-in person): one INCR per request, atomic, no read
then write race. Every answer carries the IETF draft headers `RateLimit-Limit`, `RateLimit-Remaining`
and `RateLimit-Reset` (seconds until the window resets); a refusal is a 429 in the common error shape
(sources/api/errors.py) with `limit`, `usage`, `reset` (a Unix time) and `Retry-After`.

The limit comes from settings (`API_RATE_PER_MINUTE`) unless `API_RATE_LIMIT_RESOLVER` names a function
`(workspace) -> int | None`: by default sources.plans.api_rate_limit, the workspace's plan (None: the
setting). `RateLimit-Policy` says the policy itself (`<limit>;w=<window seconds>`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from django.utils.module_loading import import_string
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from config.redis_cache import Alongside
from sources.api.auth import ApiKeyPrincipal, workspace_for_request
from sources.models import Workspace


@dataclass(frozen=True)
class RateFigures:
    """Where a caller stands in the current window."""

    limit: int
    used: int
    reset_at: float  # Unix time the window ends
    window: int = 60  # seconds

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def seconds_to_reset(self, now: float | None = None) -> int:
        return max(math.ceil(self.reset_at - (time.time() if now is None else now)), 0)

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.seconds_to_reset()),
            # The policy in force (draft-ietf-httpapi-ratelimit-headers): this many per this many seconds.
            "RateLimit-Policy": f"{self.limit};w={self.window}",
        }

    def as_error(self) -> dict[str, Any]:
        return {"limit": self.limit, "usage": self.used, "reset": math.ceil(self.reset_at)}


def limit_for(workspace: Workspace | None) -> int:
    resolver = getattr(settings, "API_RATE_LIMIT_RESOLVER", "")
    if resolver and workspace is not None:
        chosen = import_string(resolver)(workspace)
        if chosen is not None:
            return int(chosen)
    return int(settings.API_RATE_PER_MINUTE)


def _caller(request: Request) -> tuple[str, Workspace | None] | None:
    user = request.user
    if isinstance(user, ApiKeyPrincipal):
        return f"key:{user.api_key.id}", user.workspace
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}", workspace_for_request(request)
    return None  # refused by authentication anyway


@lru_cache(maxsize=1)
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


class ApiKeyRateThrottle(BaseThrottle):
    """Requests per window per API key (or per person, for the web UI's session)."""

    def allow_request(self, request: Request, view: Any) -> bool:
        counting = self.counting(request)
        if counting is None:
            return True
        pipe = redis_client().pipeline(transaction=False)
        for command in counting.commands:
            pipe.execute_command(*command)
        counting.replies(pipe.execute())
        return self._allowed

    def counting(self, request: Request) -> Alongside | None:
        """The commands that count this request, and what to make of their replies: `request.rate_limit`,
        and whether it is allowed (`allow_request`'s answer; `refuse_if_over` raises instead). None for
        a caller that is not counted. The search API sends them with its cache lookup (api/search.py)."""
        caller = _caller(request)
        if caller is None:
            return None
        identity, workspace = caller
        window = int(settings.API_RATE_WINDOW_SECONDS)
        limit = limit_for(workspace)
        now = time.time()
        start = int(now // window * window)
        key = f"{settings.REDIS_KEY_PREFIX}api-rate:{identity}:{start}"

        def replies(values: list[Any]) -> None:
            used = int(values[0])
            figures = RateFigures(limit=limit, used=used, reset_at=start + window, window=window)
            # Read by the view (headers) and the error handler (body): an attribute of ours on DRF's request.
            request.rate_limit = figures  # type: ignore[attr-defined]
            self._wait = figures.reset_at - now
            self._allowed = used <= limit

        return Alongside(commands=[("INCR", key), ("EXPIRE", key, window + 1)], replies=replies)

    def refuse_if_over(self, counting: Alongside) -> Alongside:
        """`counting`, raising DRF's Throttled (a 429) from its replies when the request is over the limit."""

        def replies(values: list[Any]) -> None:
            counting.replies(values)
            if not self._allowed:
                raise Throttled(self.wait())

        return Alongside(commands=counting.commands, replies=replies)

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)
