"""Fetching pages from addresses people give us, without letting them point us at our own network.

Every hop of every request goes through `fetch()`: the URL is checked, the host is resolved once, every
address it resolves to must be public (or allowed by the policy), and the connection goes to exactly that
address, so a DNS server that answers differently the second time (rebinding) has no second time. Bodies are
streamed and counted both on the wire and after decompression. Failures come out as a small exception
hierarchy that says whether a retry can help.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urljoin

import httpx

from checked_http.addresses import (
    METADATA_ADDRESSES,
    PRIVATE_NETWORKS,
    Resolver,
    address_block_reason,
    blocked_error,
    parse_ip_literal,
    resolve_allowed_addresses,
)
from checked_http.errors import (
    BlockedAddressError,
    FetchError,
    PermanentFetchError,
    RateLimitedError,
    TooLargeError,
    TransientFetchError,
    error_for_status,
    parse_retry_after,
)
from checked_http.transport import CheckedAddressTransport
from ingestion.crawl.decoding import StreamDecoder, UnsupportedEncoding

__all__ = [
    "BOT_NAME",
    "METADATA_ADDRESSES",
    "PRIVATE_NETWORKS",
    "USER_AGENT",
    "BlockedAddressError",
    "CheckedAddressTransport",
    "FetchError",
    "FetchPolicy",
    "FetchResult",
    "PermanentFetchError",
    "RateLimitedError",
    "TooLargeError",
    "TransientFetchError",
    "address_block_reason",
    "check_url",
    "fetch",
    "parse_ip_literal",
    "parse_retry_after",
    "resolve_allowed_addresses",
    "same_site",
]

BOT_NAME = "GroundedBot"
USER_AGENT = f"{BOT_NAME}/0.1 (+https://grounded.example/bot)"


@dataclass(frozen=True)
class FetchPolicy:
    """What one fetch may do. Built from settings by the caller; every limit has a safe default."""

    allow_private_networks: bool = False
    # Networks allowed even when private networks are not, e.g. ("10.1.2.0/24",) for one intranet host.
    allowed_networks: tuple[str, ...] = ()
    max_bytes: int = 10 * 1024 * 1024  # on the wire
    max_decoded_bytes: int = 30 * 1024 * 1024  # after gzip/deflate
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 20.0
    total_timeout_s: float = 60.0
    max_redirects: int = 5
    same_host_redirects_only: bool = False
    user_agent: str = USER_AGENT
    verify: ssl.SSLContext | str | bool = True
    # Replaces the system resolver (tests, custom DNS); returns the host's addresses as strings.
    resolver: Resolver | None = field(default=None, compare=False)
    dns_timeout_s: float = 5.0


@dataclass(frozen=True)
class FetchResult:
    url: str
    final_url: str
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    encoding: str | None  # the charset the server declared, if any
    not_modified: bool = False
    redirects: tuple[str, ...] = ()
    server_address: str | None = None  # the IP address the response came from

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def text(self) -> str:
        if self.encoding:
            try:
                return self.body.decode(self.encoding, errors="replace")
            except LookupError:
                pass
        from charset_normalizer import from_bytes

        best = from_bytes(self.body).best()
        return str(best) if best is not None else self.body.decode("utf-8", errors="replace")


def check_url(url: str, policy: FetchPolicy) -> httpx.URL:
    """Parse and check a URL without touching the network: http(s) only, a host, and no blocked IP literal."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise PermanentFetchError(
            "This doesn't look like a web address. Use a full address starting with https://.",
            f"malformed URL {url!r}: {exc}",
        ) from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise PermanentFetchError(
            "Only web addresses starting with http:// or https:// can be fetched.", f"unsupported URL {url!r}"
        )
    literal = parse_ip_literal(parsed.host)
    if literal is not None:
        reason = address_block_reason(literal, policy)
        if reason:
            raise blocked_error(parsed.host, literal, reason)
    return parsed


_REDIRECT_STATUSES = {301, 302, 303, 307, 308}


def same_site(host_a: str, host_b: str) -> bool:
    """One host, allowing the www. prefix to come or go, since sites move between the two all the time."""
    return host_a.lower().removeprefix("www.") == host_b.lower().removeprefix("www.")


def fetch(
    url: str,
    policy: FetchPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    same_host_redirects_only: bool | None = None,
    follow_redirects: bool = True,
    raise_for_status: bool = True,
    method: str = "GET",
    content: bytes | None = None,
) -> FetchResult:
    """Fetch one URL safely. Conditional headers (If-None-Match, If-Modified-Since) pass through, and a 304
    comes back as a result with `not_modified=True`. Raises a FetchError subclass on any failure; with
    raise_for_status=False, HTTP error statuses come back as results instead (bodies cut at 64 KB), and with
    follow_redirects=False a redirect comes back as a result with its Location header."""
    deadline = time.monotonic() + policy.total_timeout_s
    current = check_url(url, policy)
    same_host_only = (
        policy.same_host_redirects_only if same_host_redirects_only is None else same_host_redirects_only
    )
    request_headers = {"User-Agent": policy.user_agent, "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
    request_headers.update(headers or {})
    redirects: list[str] = []
    with httpx.Client(
        transport=CheckedAddressTransport(policy, policy.verify), trust_env=False, follow_redirects=False
    ) as client:
        for _hop in range(policy.max_redirects + 1):
            remaining = _remaining(deadline, str(current))
            timeout = httpx.Timeout(
                min(policy.read_timeout_s, remaining), connect=min(policy.connect_timeout_s, remaining)
            )
            request = client.build_request(
                method, current, headers=request_headers, content=content, timeout=timeout
            )
            with _translated_errors(str(current)):
                response = client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if follow_redirects and response.status_code in _REDIRECT_STATUSES and location:
                    target = check_url(urljoin(str(current), location), policy)
                    if same_host_only and not same_site(target.host, current.host):
                        raise PermanentFetchError(
                            f"This page redirects to another website ({target.host}), which we don't follow "
                            "for this source. Use the address it redirects to instead.",
                            f"redirect from {current} to {target} left the host",
                        )
                    redirects.append(str(target))
                    if target.host != current.host:
                        # Credentials meant for one site are not handed to the next (as browsers do).
                        request_headers = {
                            k: v
                            for k, v in request_headers.items()
                            if k.lower() not in ("authorization", "cookie")
                        }
                    if response.status_code in (301, 302, 303) and method not in ("GET", "HEAD"):
                        method, content = "GET", None
                    current = target
                    continue
                return _finish(url, current, response, policy, deadline, tuple(redirects), raise_for_status)
            finally:
                response.close()
    raise PermanentFetchError(
        "This page redirects too many times, so we stopped following it.",
        f"more than {policy.max_redirects} redirects from {url}: {redirects}",
    )


def _finish(
    url: str,
    current: httpx.URL,
    response: httpx.Response,
    policy: FetchPolicy,
    deadline: float,
    redirects: tuple[str, ...],
    raise_for_status: bool,
) -> FetchResult:
    status = response.status_code
    server = _peer_address(response)
    result_headers = {name.lower(): value for name, value in response.headers.items()}
    if status == 304 or (status in _REDIRECT_STATUSES and "location" in result_headers):
        body = b""
    elif status >= 400 or status < 200:
        # A small look at the body tells a rate-limit page served as 503 apart from an outage.
        limit = 4096 if raise_for_status else 65536
        body = _read_body(response, policy, deadline, str(current), limit=limit, strict=False)
        if raise_for_status:
            raise error_for_status(status, str(current), response.headers.get("retry-after"), body)
    elif 300 <= status < 400:
        raise PermanentFetchError(
            "This page redirects without saying where to.", f"HTTP {status} without Location from {current}"
        )
    else:
        body = _read_body(response, policy, deadline, str(current))
    return FetchResult(
        url=url,
        final_url=str(current),
        status=status,
        headers=result_headers,
        body=body,
        encoding=response.charset_encoding,
        not_modified=status == 304,
        redirects=redirects,
        server_address=server,
    )


def _peer_address(response: httpx.Response) -> str | None:
    stream = response.extensions.get("network_stream")
    try:
        peer = stream.get_extra_info("server_addr") if stream is not None else None
    except OSError:  # the server already hung up
        return None
    return str(peer[0]) if peer else None


def _remaining(deadline: float, url: str) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TransientFetchError(
            "The site took too long to answer; we'll retry automatically.",
            f"total time limit reached for {url}",
        )
    return remaining


def _read_body(
    response: httpx.Response,
    policy: FetchPolicy,
    deadline: float,
    url: str,
    *,
    limit: int | None = None,
    strict: bool = True,
) -> bytes:
    """Stream the body, stopping as soon as it grows past the limits on the wire or after decompression.
    With strict=False (error pages) the body is cut at `limit` instead of failing."""
    declared = response.headers.get("content-length", "")
    if strict and declared.isdigit() and int(declared) > policy.max_bytes:
        raise _too_large(url, policy.max_bytes, f"Content-Length {declared}")
    max_decoded = limit or policy.max_decoded_bytes
    try:
        decoder = StreamDecoder(response.headers.get("content-encoding", ""), max_decoded=max_decoded)
    except UnsupportedEncoding as exc:
        raise PermanentFetchError("The site sent the page in a format we can't read.", str(exc)) from exc
    parts: list[bytes] = []
    wire_bytes = 0
    with _translated_errors(url):
        for chunk in response.iter_raw():
            _remaining(deadline, url)
            wire_bytes += len(chunk)
            if wire_bytes > policy.max_bytes:
                if not strict:
                    break
                raise _too_large(url, policy.max_bytes, f"more than {policy.max_bytes} bytes on the wire")
            try:
                parts.extend(decoder.feed(chunk))
            except TooLargeError:
                if not strict:
                    break
                raise _too_large(
                    url, max_decoded, f"more than {max_decoded} bytes after decompression"
                ) from None
            if not strict and decoder.decoded_total >= max_decoded:
                break
        else:
            parts.extend(decoder.flush())
    body = b"".join(parts)
    return body if strict else body[:max_decoded]


def _too_large(url: str, limit: int, detail: str) -> TooLargeError:
    megabytes = limit / (1024 * 1024)
    size = f"{megabytes:.0f} MB" if megabytes >= 1 else f"{limit // 1024} KB"
    return TooLargeError(
        f"This page is larger than the {size} we accept, so we skipped it.", f"{url}: {detail}"
    )


@contextmanager
def _translated_errors(url: str) -> Iterator[None]:
    """Turns httpx's exceptions into ours, classified for retrying."""
    try:
        yield
    except httpx.HTTPError as exc:
        detail = f"{type(exc).__name__} for {url}: {exc}"
        if isinstance(exc, httpx.TimeoutException):
            raise TransientFetchError(
                "The site took too long to answer; we'll retry automatically.", detail
            ) from exc
        if isinstance(exc, httpx.ConnectError):
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
                raise PermanentFetchError(
                    "This site's security certificate isn't valid, so we didn't fetch it.", detail
                ) from exc
            if isinstance(cause, ConnectionRefusedError) or "Connection refused" in str(exc):
                raise PermanentFetchError(
                    "We couldn't reach this page: the site refused the connection.", detail
                ) from exc
            raise TransientFetchError(
                "We couldn't reach this page; we'll retry automatically.", detail
            ) from exc
        if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
            raise PermanentFetchError("This doesn't look like a valid web address.", detail) from exc
        raise TransientFetchError(
            "The connection to the site was interrupted; we'll retry automatically.", detail
        ) from exc


def fetch_policy() -> FetchPolicy:
    """The deployment's crawl policy (settings), for fetches of addresses tenants give us."""
    from django.conf import settings

    return FetchPolicy(
        allow_private_networks=settings.CRAWL_ALLOW_PRIVATE_NETWORKS,
        allowed_networks=tuple(settings.CRAWL_ALLOWED_NETWORKS),
        max_bytes=settings.CRAWL_MAX_SOURCE_BYTES,
        total_timeout_s=settings.CRAWL_FETCH_TIMEOUT,
    )


def check_address(url: str, policy: FetchPolicy | None = None) -> str:
    """A tenant's address checked before it is saved: http(s), a host, and not an address we refuse to
    fetch (after a DNS lookup). Raises FetchError with a message for people. DNS trouble is let through:
    the fetch reports it later, with retries, and checks again, since a name can point elsewhere later."""
    policy = policy or fetch_policy()
    value = url.strip()
    if len(value) > 2000:
        raise PermanentFetchError("Web addresses are at most 2,000 characters.", "url too long")
    parsed = check_url(value, policy)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        resolve_allowed_addresses(parsed.host, port, policy)
    except BlockedAddressError:
        raise
    except FetchError:
        pass
    return value
