"""Requests to URLs that tenants configure (an agent's model URL; later any per-agent reranker, embedder or
webhook), held to the crawler's address policy.

A workspace admin is a customer, not an operator: a URL they type must not make this server call our own
network. Every connection goes through `checked_http`'s `CheckedAddressTransport`, which resolves the host
once, refuses private, loopback and cloud-metadata addresses unless the operator allows them
(`OUTBOUND_ALLOW_PRIVATE_NETWORKS`, `OUTBOUND_ALLOWED_NETWORKS`; by default the crawler's policy), and
connects to exactly the address it checked, so DNS that answers differently at call time (rebinding) gains
nothing. Redirects are followed hop by hop, each hop through the same check. Responses are limited in time
(to connect, between reads, and in total) and in size, streamed or not.

No Django models here: the policy reads settings, and the validator raises Django's ValidationError, so
any layer (retrieval's rerankers, agents, integrations) can use it.
"""

from __future__ import annotations

import codecs
import json as jsonlib
import ssl
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin

import httpx
from django.core.exceptions import ValidationError

from checked_http.addresses import Resolver, resolve_allowed_addresses
from checked_http.errors import BlockedAddressError, FetchError, TransientFetchError
from checked_http.transport import CheckedAddressTransport


class OutboundError(Exception):
    """A call to a tenant-configured URL failed: `message` for the workspace admin, `detail` for operators."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


class OutboundBlocked(OutboundError):
    """The URL or an address it resolves (or redirects) to is not allowed; nothing was sent to it."""


class OutboundTooLarge(OutboundError):
    """The response passed the size limit; reading stopped there."""


class OutboundTimeout(OutboundError):
    """Connecting, waiting for data, or the whole exchange took longer than its limit."""


class OutboundUnreachable(OutboundError):
    """No answer: unknown host, refused connection, broken TLS, a dropped stream, or too many redirects."""


@dataclass(frozen=True)
class OutboundPolicy:
    """Satisfies `checked_http.addresses.AddressRules`, plus the limits of one exchange."""

    allow_private_networks: bool = False
    allowed_networks: tuple[str, ...] = ()
    max_response_bytes: int = 10 * 1024 * 1024
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0  # the longest silence between two pieces of the response
    total_timeout_s: float = 120.0
    max_redirects: int = 3
    verify: ssl.SSLContext | str | bool = True
    resolver: Resolver | None = field(default=None, compare=False)  # tests and custom DNS
    dns_timeout_s: float = 5.0


def outbound_policy(**overrides: Any) -> OutboundPolicy:
    """The operator's policy from settings. Unset address settings follow the crawler's."""
    from django.conf import settings

    allow_private = settings.OUTBOUND_ALLOW_PRIVATE_NETWORKS
    if allow_private is None:
        allow_private = settings.CRAWL_ALLOW_PRIVATE_NETWORKS
    allowed = settings.OUTBOUND_ALLOWED_NETWORKS
    if allowed is None:
        allowed = settings.CRAWL_ALLOWED_NETWORKS
    policy = OutboundPolicy(
        allow_private_networks=allow_private,
        allowed_networks=tuple(allowed),
        max_response_bytes=settings.OUTBOUND_MAX_RESPONSE_BYTES,
        connect_timeout_s=settings.OUTBOUND_CONNECT_TIMEOUT,
        read_timeout_s=settings.OUTBOUND_READ_TIMEOUT,
        total_timeout_s=settings.OUTBOUND_TOTAL_TIMEOUT,
    )
    return replace(policy, **overrides)


def check_outbound_url(url: str, policy: OutboundPolicy | None = None) -> httpx.URL:
    """Raise OutboundError unless `url` is http(s) with a host whose every address the policy allows.
    Resolves the host (DNS), so it is a save-time check; the call itself checks again."""
    policy = policy or outbound_policy()
    parsed = _parse(url)
    with _translated_errors(str(parsed)):
        resolve_allowed_addresses(parsed.host, parsed.port or _default_port(parsed), policy)
    return parsed


def validate_outbound_url(value: str) -> None:
    """A model-field validator: an empty value passes (the feature is off); anything else must be callable."""
    if not value:
        return
    try:
        check_outbound_url(value)
    except OutboundError as exc:
        raise ValidationError(exc.message, code="outbound_url") from exc


class OutboundResponse:
    """A response whose body is read within the exchange's deadline and size limit."""

    def __init__(self, response: httpx.Response, policy: OutboundPolicy, deadline: float) -> None:
        self._response = response
        self._policy = policy
        self._deadline = deadline
        self.status_code = response.status_code
        self.headers = response.headers
        self.url = str(response.request.url)

    def iter_bytes(self) -> Iterator[bytes]:
        limit = self._policy.max_response_bytes
        declared = self.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(self.url, limit, f"Content-Length {declared}")
        received = 0
        with _translated_errors(self.url):
            # Decoded bytes are counted, so a compressed body is held to the limit as it expands.
            for chunk in self._response.iter_bytes():
                _remaining(self._deadline, self.url)
                received += len(chunk)
                if received > limit:
                    raise _too_large(self.url, limit, f"more than {limit} bytes")
                yield chunk

    def iter_lines(self) -> Iterator[str]:
        """Lines of a streamed text response (Server-Sent Events), as they arrive."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        buffer = ""
        for chunk in self.iter_bytes():
            buffer += decoder.decode(chunk)
            while (cut := buffer.find("\n")) >= 0:
                line, buffer = buffer[:cut], buffer[cut + 1 :]
                yield line.rstrip("\r")
        buffer += decoder.decode(b"", final=True)
        if buffer:
            yield buffer.rstrip("\r")

    def read(self) -> bytes:
        return b"".join(self.iter_bytes())

    def json(self) -> Any:
        try:
            return jsonlib.loads(self.read())
        except ValueError as exc:
            raise OutboundUnreachable(
                "The service sent an answer we couldn't read.", f"invalid JSON from {self.url}: {exc}"
            ) from exc

    def body_start(self, limit: int = 2000) -> str:
        """The start of an error response, for operators; never raises."""
        try:
            parts, size = [], 0
            for chunk in self.iter_bytes():
                parts.append(chunk)
                size += len(chunk)
                if size >= limit:
                    break
            return b"".join(parts)[:limit].decode(errors="replace")
        except OutboundError as exc:
            return f"(body unreadable: {exc.detail})"


class OutboundClient:
    """One HTTP client for tenant-configured URLs. Use it as a context manager, or call `close()`."""

    def __init__(self, policy: OutboundPolicy | None = None) -> None:
        self.policy = policy or outbound_policy()
        self._client = httpx.Client(
            transport=CheckedAddressTransport(self.policy, self.policy.verify),
            trust_env=False,  # an HTTP(S)_PROXY in the environment must not become a way around the check
            follow_redirects=False,  # followed below, one checked hop at a time
        )

    def __enter__(self) -> OutboundClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    @contextmanager
    def stream(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Iterator[OutboundResponse]:
        """Send a request and hand back the response with its body unread (a model's SSE, say)."""
        policy = self.policy
        deadline = time.monotonic() + policy.total_timeout_s
        current = _parse(url)
        request_headers = {"Accept-Encoding": "identity", **(headers or {})}
        body = json
        for _hop in range(policy.max_redirects + 1):
            remaining = _remaining(deadline, str(current))
            timeout = httpx.Timeout(
                min(policy.read_timeout_s, remaining), connect=min(policy.connect_timeout_s, remaining)
            )
            request = self._client.build_request(
                method, current, json=body, headers=request_headers, timeout=timeout
            )
            with _translated_errors(str(current)):
                response = self._client.send(request, stream=True)
            location = response.headers.get("location")
            if response.status_code in _REDIRECT_STATUSES and location:
                response.close()
                target = _parse(urljoin(str(current), location))
                if (target.scheme, target.host, target.port) != (current.scheme, current.host, current.port):
                    # Credentials meant for one service are not handed to the next, as browsers do.
                    request_headers = {
                        k: v
                        for k, v in request_headers.items()
                        if k.lower() not in ("authorization", "cookie")
                    }
                if response.status_code in (301, 302, 303) and method != "GET":
                    method, body = "GET", None
                current = target
                continue
            try:
                yield OutboundResponse(response, policy, deadline)
            finally:
                response.close()
            return
        raise OutboundUnreachable(
            "The service redirected us too many times, so we stopped following it.",
            f"more than {policy.max_redirects} redirects from {url}",
        )

    def request(
        self, method: str, url: str, *, json: Any = None, headers: Mapping[str, str] | None = None
    ) -> tuple[int, bytes]:
        """Send a request and read the whole response (within the limits): (status, body)."""
        with self.stream(method, url, json=json, headers=headers) as response:
            return response.status_code, response.read()


_REDIRECT_STATUSES = {301, 302, 303, 307, 308}


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise OutboundBlocked(
            "This doesn't look like a web address. Use a full address starting with https://.",
            f"malformed URL {url!r}: {exc}",
        ) from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise OutboundBlocked(
            "Only addresses starting with http:// or https:// can be called.", f"unsupported URL {url!r}"
        )
    if parsed.userinfo:
        raise OutboundBlocked(
            "Leave the user name and password out of the address; use the API key field instead.",
            f"credentials in URL for {parsed.host}",
        )
    return parsed


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


def _remaining(deadline: float, url: str) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise OutboundTimeout("The service took too long to answer.", f"total time limit reached for {url}")
    return remaining


def _too_large(url: str, limit: int, detail: str) -> OutboundTooLarge:
    megabytes = limit / (1024 * 1024)
    size = f"{megabytes:.0f} MB" if megabytes >= 1 else f"{max(1, limit // 1024)} KB"
    return OutboundTooLarge(f"The service's answer was larger than the {size} we accept.", f"{url}: {detail}")


def _blocked_message(error: BlockedAddressError) -> str:
    if "cloud metadata" in error.detail:
        return "This address points to a cloud metadata service, which this server never calls."
    return (
        "This address points to a private or reserved network (such as localhost or 10.x.x.x), which this "
        "server doesn't call. If the service runs on your own network, ask the server's operator to allow it."
    )


@contextmanager
def _translated_errors(url: str) -> Iterator[None]:
    """The checked client's address errors (raised where the connection is made) and httpx's, as ours."""
    try:
        yield
    except BlockedAddressError as exc:
        raise OutboundBlocked(_blocked_message(exc), exc.detail) from exc
    except TransientFetchError as exc:  # a DNS lookup that timed out or failed for now
        raise OutboundUnreachable(
            "We couldn't look up this address right now; try again shortly.", exc.detail
        ) from exc
    except FetchError as exc:  # a host that doesn't exist, an unreadable numeric host
        raise OutboundUnreachable(
            "We couldn't find this address's host. Check it for typos.", exc.detail
        ) from exc
    except httpx.TimeoutException as exc:
        raise OutboundTimeout(
            "The service took too long to answer.", f"{type(exc).__name__} for {url}: {exc}"
        ) from exc
    except httpx.HTTPError as exc:
        raise OutboundUnreachable(
            "We couldn't reach the service at this address.", f"{type(exc).__name__} for {url}: {exc}"
        ) from exc
