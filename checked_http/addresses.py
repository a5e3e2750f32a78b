"""Which network addresses we may connect to, and resolving a host to addresses we may connect to.

Pure functions over `ipaddress` objects, no I/O except the one DNS lookup in `resolve_allowed_addresses`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Protocol

from checked_http.errors import BlockedAddressError, PermanentFetchError, TransientFetchError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]

# Cloud instance-metadata endpoints hand out credentials; they stay blocked whatever the policy allows.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer
        "192.0.0.192",  # Oracle Cloud
    )
)
# What `allow_private_networks` opens: the ranges an intranet site can live on.
PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "::1/128",
        "fc00::/7",
    )
)
NAT64_NETWORK = ipaddress.ip_network("64:ff9b::/96")


class AddressRules(Protocol):
    """The part of a FetchPolicy that decides addresses."""

    # Read-only, so that frozen dataclasses (FetchPolicy, OutboundPolicy) satisfy it.
    @property
    def allow_private_networks(self) -> bool: ...
    @property
    def allowed_networks(self) -> tuple[str, ...]: ...
    @property
    def resolver(self) -> Resolver | None: ...
    @property
    def dns_timeout_s(self) -> float: ...


def address_block_reason(address: IPAddress, policy: AddressRules) -> str | None:
    """Why we must not connect to `address`, or None when we may."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        address = ipaddress.IPv6Address(address.compressed.split("%")[0])
    if address in METADATA_ADDRESSES:
        return "cloud metadata address"
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = address_block_reason(embedded, policy)
        return f"{reason} (embedded in {address})" if reason else None
    if address.is_multicast or address.is_unspecified or address.is_link_local:
        return "link-local, multicast or unspecified address"
    if any(address in network for network in _networks(policy.allowed_networks)):
        return None
    if any(address in network for network in PRIVATE_NETWORKS):
        return None if policy.allow_private_networks else "private network address"
    if address.is_global and not address.is_reserved:
        return None
    return "reserved or non-public address"


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv6 one (mapped, compatible, NAT64, 6to4): where it really goes."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64_NETWORK:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    as_int = int(address)
    if 1 < as_int < 2**32:  # IPv4-compatible (::a.b.c.d), deprecated but still routed by some stacks
        return ipaddress.IPv4Address(as_int)
    return None


_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?$", re.IGNORECASE)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host names without DNS: dotted or bracketed IPs, and the decimal, octal and hex
    spellings (http://2130706433/, http://0x7f.1/) that resolvers quietly accept."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
        except OSError:
            raise PermanentFetchError(
                "This doesn't look like a valid web address.", f"unparseable numeric host {host!r}"
            ) from None
    return None


def blocked_error(host: str, address: IPAddress, reason: str) -> BlockedAddressError:
    if reason.startswith("cloud metadata"):
        message = "This address points to a cloud metadata service, which we never fetch."
    else:
        message = "This address points to a private network, which we don't fetch."
    return BlockedAddressError(message, f"{host} -> {address}: {reason}")


def _system_resolve(host: str, port: int) -> list[str]:
    # An IPv4 or IPv6 socket address starts with the address as text (typeshed also allows AF_UNIX's).
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


# getaddrinfo has no timeout of its own and a dead resolver blocks for the system's retries (often
# 20-40 s), longer than a page job's time limit. Lookups run here so a fetch can stop waiting; a stuck
# lookup holds one of these threads until the system gives up, never the worker.
_lookups = ThreadPoolExecutor(max_workers=4, thread_name_prefix="dns")


def _lookup(host: str, port: int, policy: AddressRules) -> Sequence[str]:
    future = _lookups.submit(policy.resolver or _system_resolve, host, port)
    try:
        return future.result(timeout=policy.dns_timeout_s)
    except FutureTimeout:
        future.cancel()
        raise TransientFetchError(
            "We couldn't look up this website's address right now; we'll retry automatically.",
            f"DNS lookup for {host} took longer than {policy.dns_timeout_s:g} s",
        ) from None


def resolve_allowed_addresses(host: str, port: int, policy: AddressRules) -> list[str]:
    """Resolve `host` once; return its addresses if every one is allowed, else raise BlockedAddressError."""
    host = host.lower().rstrip(".")
    literal = parse_ip_literal(host)
    if literal is not None:
        candidates = [literal]
    elif host == "localhost" or host.endswith(".localhost"):
        # RFC 6761: always loopback, whatever a resolver says; and never worth a DNS query.
        candidates = [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    else:
        try:
            names = _lookup(host, port, policy)
        except socket.gaierror as exc:
            if exc.errno == socket.EAI_AGAIN:
                raise TransientFetchError(
                    "We couldn't look up this website's address right now; we'll retry automatically.",
                    f"DNS temporary failure for {host}: {exc}",
                ) from exc
            raise PermanentFetchError(
                "We couldn't find this website. Check the address for typos.",
                f"DNS lookup failed for {host}: {exc}",
            ) from exc
        candidates = [ipaddress.ip_address(name) for name in names]
        if not candidates:
            raise PermanentFetchError(
                "We couldn't find this website. Check the address for typos.", f"no addresses for {host}"
            )
    for address in candidates:
        reason = address_block_reason(address, policy)
        if reason:
            raise blocked_error(host, address, reason)
    return list(dict.fromkeys(str(a) for a in candidates))


def _networks(cidrs: tuple[str, ...]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr, strict=False) for cidr in cidrs]
