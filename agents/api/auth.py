"""Who may call an agent's public API: its public key, from an allowed origin, within rate limits.

The public key is not a secret (it sits in the customer's page), so the origin check, the limits and,
for anything beyond public knowledge, a visitor token signed by the host site do the protecting.
"""

from __future__ import annotations

import time
import uuid
from functools import lru_cache

import redis
from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.request import Request

from agents.models import Agent
from agents.visitor import Visitor, VisitorTokenError, verify_any, workspace_secrets
from config.body_limits import BodyLimit, content_length, refusal_message
from config.request_log import client_address
from sources.api.errors import ApiError


class TooManyRequests(exceptions.APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "Too many requests; please slow down."
    default_code = "rate_limited"


class BadVisitorToken(exceptions.APIException):
    # Not AuthenticationFailed: DRF turns that into 403 for views without authenticators.
    status_code = status.HTTP_401_UNAUTHORIZED
    default_detail = "The visitor token is not valid."
    default_code = "invalid_visitor_token"


def agent_for_key(public_key: str) -> Agent:
    # The key is what names the workspace, so this lookup crosses workspaces on purpose.
    agent = Agent.unscoped.select_related("workspace").filter(public_key=public_key).first()
    if agent is None:
        raise exceptions.NotFound("No agent with this key.")
    return agent


def check_origin(agent: Agent, request: Request) -> str:
    origin = request.headers.get("Origin", "")
    if not origin or origin.rstrip("/") not in {o.rstrip("/") for o in agent.allowed_origins}:
        raise exceptions.PermissionDenied("This site is not allowed to use this agent.")
    return origin


def check_rate(agent: Agent, request: Request) -> None:
    """A sliding one-minute window per agent and per client address, in Redis so every web process
    shares it. (A fixed window would let a burst straddling the minute through twice.)"""
    now = time.time()
    client = _redis()
    for scope, identity, limit in (
        ("key", agent.public_key, settings.WIDGET_RATE_PER_KEY),
        ("ip", f"{agent.public_key}:{client_address(request)}", settings.WIDGET_RATE_PER_ADDRESS),
    ):
        key = f"{settings.REDIS_KEY_PREFIX}rate:{scope}:{identity}"
        pipe = client.pipeline()
        pipe.zremrangebyscore(key, 0, now - 60)
        pipe.zadd(key, {f"{now}:{uuid.uuid4().hex}": now})
        pipe.zcard(key)
        pipe.expire(key, 61)
        count = pipe.execute()[2]
        if count > limit:
            raise TooManyRequests()


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


def check_size(request: Request) -> None:
    """413 in the API's shape (the limit named, in bytes as `limit`) for a body over the widget's limit,
    before anything reads it. The request-body middleware leaves these routes to the views
    (AgentPublicView.answers_body_limit), so every such refusal, however big, gets the CORS headers."""
    size = content_length(request._request)
    limit = BodyLimit(
        settings.WIDGET_MAX_REQUEST_BYTES,
        "WIDGET_MAX_REQUEST_BYTES",
        f"A question is at most {settings.WIDGET_MAX_MESSAGE_CHARS:,} characters.",
    )
    if size > limit.bytes:
        raise ApiError(413, "too_large", refusal_message(limit, size), limit=limit.bytes)


def visitor_for(agent: Agent, request: Request) -> Visitor:
    token = request.headers.get("X-Visitor-Token", "")
    if not token:
        return Visitor()
    try:
        return verify_any(workspace_secrets(agent.workspace), token)
    except VisitorTokenError as exc:
        raise BadVisitorToken(str(exc)) from exc
