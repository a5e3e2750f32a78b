"""The one way connectors talk to providers: a plain httpx client with timeouts, a request rate shared by
every worker per connection (Redis), and answers sorted into integrations.errors.

Why not config/outbound.py: that client holds tenant-typed URLs to the crawler's address policy. Provider
addresses here are operator settings (api.notion.com, www.googleapis.com, or a proxy the operator runs),
so the address policy does not apply, and tests point them at 127.0.0.1. What still applies is kept:
timeouts on connect and read, no redirects followed, and a size limit on what is read.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import httpx
import redis
from django.conf import settings

from checked_http.errors import parse_retry_after
from integrations.errors import ObjectGone, ProviderError, ProviderRateLimited, ProviderTransient

MAX_RESPONSE_BYTES = 20 * 1024 * 1024
# The longest a worker sleeps in place to keep to the request rate; longer waits requeue the job instead.
MAX_INLINE_WAIT_S = 5.0


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def _key(connection_id: int, what: str) -> str:
    return f"{settings.REDIS_KEY_PREFIX}integrations:{connection_id}:{what}"


def pause_connection(connection_id: int, seconds: float) -> None:
    """Every worker holds off this connection's calls for `seconds` (after a 429's Retry-After)."""
    _redis().set(_key(connection_id, "paused"), "1", px=max(int(seconds * 1000), 1))


def wait_for_turn(connection_id: int, per_second: float) -> None:
    """Keep this connection's calls, across all workers, to `per_second`: each call takes the next free
    slot of a shared clock. Raises ProviderRateLimited (no call made) when paused or when the wait is long."""
    client = _redis()
    paused_ms = client.pttl(_key(connection_id, "paused"))
    if paused_ms and paused_ms > 0:
        raise ProviderRateLimited(paused_ms / 1000, "paused after the provider's 429")
    interval_ms = int(1000 / per_second)
    now_ms = int(time.time() * 1000)
    slot_key = _key(connection_id, "next")
    # One atomic step: take max(now, next) as our slot and push `next` one interval further, unless the
    # slot is further away than we are willing to sleep (then nothing is reserved, and the job requeues).
    slot = int(
        client.eval(
            "local n = tonumber(redis.call('GET', KEYS[1]) or '0'); local now = tonumber(ARGV[1]);"
            "local s = math.max(n, now); if s - now > tonumber(ARGV[3]) then return s end;"
            "redis.call('SET', KEYS[1], s + tonumber(ARGV[2]), 'PX', 60000); return s",
            1,
            slot_key,
            now_ms,
            interval_ms,
            int(MAX_INLINE_WAIT_S * 1000),
        )
    )
    wait_s = (slot - now_ms) / 1000
    if wait_s > MAX_INLINE_WAIT_S:
        raise ProviderRateLimited(wait_s, "this connection's request rate (shared by every worker)")
    if wait_s > 0:
        time.sleep(wait_s)


def client() -> httpx.Client:
    timeout = settings.INTEGRATIONS_TIMEOUT
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), follow_redirects=False)


def send(request: httpx.Request, *, what: str) -> httpx.Response:
    """Send one request; network failures become ProviderTransient. The status is the caller's to read."""
    with client() as http:
        try:
            response = http.send(request, stream=True)
            try:
                body = bytearray()
                for piece in response.iter_bytes():
                    body.extend(piece)
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise ProviderError(
                            "The provider's answer is too large to read.",
                            f"{what}: over {MAX_RESPONSE_BYTES} B",
                        )
            finally:
                response.close()
        except httpx.TimeoutException as exc:
            raise ProviderTransient("The provider did not answer in time.", f"{what}: {exc!r}") from exc
        except httpx.HTTPError as exc:
            raise ProviderTransient("The provider could not be reached.", f"{what}: {exc!r}") from exc
    return httpx.Response(
        response.status_code, headers=response.headers, content=bytes(body), request=request
    )


def raise_for_common(response: httpx.Response, *, what: str, gone_on: tuple[int, ...] = (404,)) -> None:
    """The failure classes every provider shares: 429 (rate), 5xx (transient), `gone_on` (object gone)."""
    status = response.status_code
    detail = f"{what}: HTTP {status} {response.text[:500]}"
    if status == 429:
        wait = parse_retry_after(response.headers.get("retry-after"))
        raise ProviderRateLimited(wait if wait is not None else 30.0, detail)
    if status >= 500:
        raise ProviderTransient("The provider had a temporary error; we'll retry automatically.", detail)
    if status in gone_on:
        raise ObjectGone("This page was deleted or is no longer shared with Grounded.", detail, status=status)
    if status >= 400:
        raise ProviderError("The provider refused the request.", detail, status=status)


def json_of(response: httpx.Response, *, what: str) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderTransient(
            "The provider sent an unreadable answer.", f"{what}: {response.text[:300]}"
        ) from exc
