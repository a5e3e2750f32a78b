"""An httpx transport whose only way to open a connection goes through the address check.

httpcore calls its network backend's `connect_tcp(host, port)` for every new connection; ours resolves the
host once, refuses it unless every address is allowed, and connects the socket to one of exactly those
addresses. TLS is started afterwards by httpcore with the hostname, so SNI and certificate checks still use
the name.
"""

from __future__ import annotations

import functools
import ssl

import httpcore
import httpx

from checked_http.addresses import AddressRules, resolve_allowed_addresses
from checked_http.errors import BlockedAddressError


class CheckedAddressBackend(httpcore.NetworkBackend):
    """httpcore's network layer with the address check in the only place a connection is made."""

    def __init__(self, policy: AddressRules) -> None:
        self._policy = policy
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: object = None,
    ) -> httpcore.NetworkStream:
        last_error: Exception | None = None
        for address in resolve_allowed_addresses(host, port, self._policy):
            try:
                return self._inner.connect_tcp(address, port, timeout, local_address, socket_options)  # type: ignore[arg-type]
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: object = None
    ) -> httpcore.NetworkStream:
        raise BlockedAddressError("We only fetch web addresses.", f"unix socket {path} refused")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class CheckedAddressTransport(httpx.HTTPTransport):
    """An httpx transport that connects only to checked addresses. TLS still verifies the hostname (SNI and
    certificate) and the Host header still names it, because only the socket's address is pinned."""

    def __init__(self, policy: AddressRules, verify: ssl.SSLContext | str | bool = True) -> None:
        # httpx has no hook for the network backend, so build the pool HTTPTransport would, with ours in it.
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(verify),
            max_connections=4,
            retries=0,
            network_backend=CheckedAddressBackend(policy),
        )


def _ssl_context(verify: ssl.SSLContext | str | bool) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    return _cached_ssl_context(verify)


@functools.cache
def _cached_ssl_context(verify: str | bool) -> ssl.SSLContext:
    # Loading the CA bundle costs more than a fetch should pay each time (docs/BENCHMARKS.md); one
    # context per setting serves every fetch.
    return httpx.create_ssl_context(verify=verify, trust_env=False)
