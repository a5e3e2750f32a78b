"""The safe fetch: which addresses are refused (before any connection), limits, how failures are classified.

Every server here is on 127.0.0.1; a socket guard fails any test that tries to connect anywhere else.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import ipaddress
import socket
import ssl
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingestion.crawl.fetch import (
    USER_AGENT,
    BlockedAddressError,
    FetchPolicy,
    PermanentFetchError,
    RateLimitedError,
    TooLargeError,
    TransientFetchError,
    address_block_reason,
    fetch,
    parse_retry_after,
    same_site,
)
from tests.ingestion.crawl.servers import (
    FEED_SAMPLES,
    LocalServer,
    Reply,
    endless_body,
    guard_connections,
    gzip_bomb,
    redirect,
    reset_connection,
    reset_mid_body,
    send,
    serving,
    slow_drip,
    slow_headers,
    tcp_attempts,
)

LOCAL = FetchPolicy(allowed_networks=("127.0.0.1/32",), total_timeout_s=10)
PRIVATE_OK = FetchPolicy(allow_private_networks=True, total_timeout_s=10)


@pytest.fixture(autouse=True)
def connection_attempts(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    return guard_connections(monkeypatch)


def _conditional(handler) -> None:  # type: ignore[no-untyped-def]
    if handler.headers.get("If-None-Match") == '"v1"':
        send(handler, Reply(304, b"", headers={"ETag": '"v1"'}))
    else:
        send(handler, Reply(200, "<p>fresh</p>", headers={"ETag": '"v1"'}))


def _http_date(seconds_from_now: int) -> str:
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds_from_now)
    return email.utils.format_datetime(moment, usegmt=True)


@pytest.fixture(scope="module")
def faults() -> Iterator[LocalServer]:
    compression = FEED_SAMPLES / "feedparser-py" / "compression"
    routes = {
        "/ok": Reply(200, "<p>hello</p>"),
        "/429-seconds": Reply(429, "slow down", headers={"Retry-After": "7"}),
        "/429-date": Reply(429, "slow down", headers={"Retry-After": _http_date(120)}),
        "/429-bare": Reply(429, "slow down"),
        "/503-too-many": Reply(503, "<h1>503 Too Many Requests</h1>"),
        "/503": Reply(503, "<h1>Service Unavailable</h1>", headers={"Retry-After": "30"}),
        "/500": Reply(500, "boom"),
        "/502": Reply(502, "bad gateway"),
        "/400": Reply(400, "bad"),
        "/401": Reply(401, "login"),
        "/403": Reply(403, "forbidden"),
        "/404": Reply(404, "missing"),
        "/410": Reply(410, "gone"),
        "/451": Reply(451, "legal"),
        "/slow": slow_headers(3),
        "/drip": slow_drip(4),
        "/reset": reset_connection,
        "/reset-mid-body": reset_mid_body,
        "/big-declared": Reply(200, b"z" * 50_000),
        "/endless": endless_body,
        "/bomb": gzip_bomb(64),
        "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/iam/security-credentials/"),
        "/to-private": redirect("http://10.0.0.1/admin"),
        "/to-ipv6-mapped": redirect("http://[::ffff:10.0.0.1]/"),
        "/to-ok": redirect("/ok", 301),
        "/loop": redirect("/loop"),
        "/conditional": _conditional,
        "/gzip": Reply(
            200, __import__("gzip").compress(b"<p>zipped</p>"), headers={"Content-Encoding": "gzip"}
        ),
        "/deflate-no-headers": Reply(
            200, (compression / "deflate-no-headers.z").read_bytes(), headers={"Content-Encoding": "deflate"}
        ),
        "/deflate-not-compressed": Reply(
            200,
            (compression / "deflate-not-compressed.z").read_bytes(),
            headers={"Content-Encoding": "deflate"},
        ),
        "/gzip-not-compressed": Reply(
            200, (compression / "gzip-not-compressed.gz").read_bytes(), headers={"Content-Encoding": "gzip"}
        ),
        "/gzip-corrupt": Reply(
            200, (compression / "gzip-struct-error.gz").read_bytes(), headers={"Content-Encoding": "gzip"}
        ),
        "/latin1": Reply(200, "café".encode("latin-1"), content_type="text/html; charset=ISO-8859-1"),
    }
    with serving(routes) as server:
        yield server


# Addresses ------------------------------------------------------------------------------------------------

NEVER_PUBLIC = [
    "127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1", "100.64.0.1",
    "169.254.169.254", "169.254.1.1", "0.0.0.0", "255.255.255.255", "224.0.0.1",  # noqa: S104 - refused
    "192.0.2.1", "240.0.0.1", "198.18.0.1", "192.0.0.192", "168.63.129.16", "169.254.170.2",
    "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "fd00:ec2::254", "100.100.100.200",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "64:ff9b::a00:1",
    "2002:a00:1::", "2002:7f00:1::", "2001::1", "2001:db8::1",
]  # fmt: skip
PUBLIC = ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2002:808:808::", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", NEVER_PUBLIC)
def test_non_public_addresses_are_blocked_by_default(address: str) -> None:
    assert address_block_reason(ipaddress.ip_address(address), FetchPolicy()) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_block_reason(ipaddress.ip_address(address), FetchPolicy()) is None


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.0.10", "100.64.3.4", "::1", "fd12::1"]
)
def test_private_networks_open_only_when_the_policy_allows_them(address: str) -> None:
    assert address_block_reason(ipaddress.ip_address(address), PRIVATE_OK) is None


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "fd00:ec2::254",
        "100.100.100.200",
        "::ffff:169.254.169.254",
        "169.254.1.1",
        "0.0.0.0",  # noqa: S104 - an address to refuse
        "fe80::1",
    ],
)
def test_metadata_and_link_local_stay_blocked_even_when_private_networks_are_allowed(address: str) -> None:
    assert address_block_reason(ipaddress.ip_address(address), PRIVATE_OK) is not None
    everything = FetchPolicy(allow_private_networks=True, allowed_networks=("0.0.0.0/0", "::/0"))
    assert address_block_reason(ipaddress.ip_address(address), everything) is not None


def test_allowed_networks_open_only_the_listed_range() -> None:
    assert address_block_reason(ipaddress.ip_address("127.0.0.1"), LOCAL) is None
    assert address_block_reason(ipaddress.ip_address("127.0.0.2"), LOCAL) is not None
    assert address_block_reason(ipaddress.ip_address("10.0.0.1"), LOCAL) is not None


@pytest.fixture
def listener() -> Iterator[LocalServer]:
    with serving({"/": Reply(200, "secret")}) as server:
        yield server


REFUSED_URLS = [
    "http://127.0.0.1:{port}/",
    "http://localhost:{port}/",
    "http://LOCALHOST.:{port}/",
    "http://[::1]:{port}/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://100.100.100.200/latest/meta-data/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:7f00:1]:{port}/",
    "http://0.0.0.0:{port}/",
    "http://2130706433:{port}/",
    "http://0x7f000001:{port}/",
    "http://0x7f.0.0.1:{port}/",
    "http://0177.0.0.1:{port}/",
    "http://127.1:{port}/",
]


@pytest.mark.parametrize("template", REFUSED_URLS)
def test_private_targets_are_refused_without_connecting(
    template: str, listener: LocalServer, connection_attempts: list[object]
) -> None:
    with pytest.raises(PermanentFetchError) as caught:
        fetch(template.format(port=listener.port), FetchPolicy())
    assert tcp_attempts(connection_attempts) == []
    assert listener.connections == 0
    assert caught.value.message  # written for people
    if "0177" not in template:  # httpx rejects that spelling outright, as a malformed URL
        assert isinstance(caught.value, BlockedAddressError)
        assert "private network" in caught.value.message or "metadata" in caught.value.message


def test_metadata_address_is_refused_even_when_private_networks_are_allowed(
    connection_attempts: list[object],
) -> None:
    with pytest.raises(BlockedAddressError, match="metadata"):
        fetch("http://169.254.169.254/latest/meta-data/", PRIVATE_OK)
    assert tcp_attempts(connection_attempts) == []


def test_loopback_is_fetched_when_private_networks_are_allowed(listener: LocalServer) -> None:
    result = fetch(listener.url("/"), PRIVATE_OK)
    assert result.body == b"secret"
    assert result.server_address == "127.0.0.1"


@pytest.mark.parametrize(
    "url",
    ["not a url", "ftp://example.com/file", "file:///etc/passwd", "javascript:alert(1)", "http://", "//x"],
)
def test_malformed_or_non_web_urls_are_permanent_errors(url: str, connection_attempts: list[object]) -> None:
    with pytest.raises(PermanentFetchError) as caught:
        fetch(url, FetchPolicy())
    assert "address" in caught.value.message
    assert tcp_attempts(connection_attempts) == []


# Pinning the checked address ------------------------------------------------------------------------------


def test_a_host_is_resolved_once_and_the_connection_goes_to_the_checked_address(
    listener: LocalServer, connection_attempts: list[object]
) -> None:
    answers = iter([["127.0.0.1"], ["10.0.0.1"]])  # a rebinding DNS server: public first, private after
    lookups: list[str] = []

    def rebinding_resolver(host: str, port: int) -> list[str]:
        lookups.append(host)
        return next(answers)

    policy = FetchPolicy(allowed_networks=("127.0.0.1/32",), resolver=rebinding_resolver)
    result = fetch(f"http://rebind.test:{listener.port}/", policy)
    assert result.body == b"secret"
    assert result.server_address == "127.0.0.1"
    assert lookups == ["rebind.test"]
    assert listener.requests[-1].headers["Host"] == f"rebind.test:{listener.port}"
    # The second answer is checked too, and refused before any connection is made.
    with pytest.raises(BlockedAddressError):
        fetch(f"http://rebind.test:{listener.port}/", policy)
    assert {a[0] for a in tcp_attempts(connection_attempts)} == {"127.0.0.1"}


def test_a_host_with_any_private_address_is_refused(
    listener: LocalServer, connection_attempts: list[object]
) -> None:
    policy = FetchPolicy(
        allowed_networks=("127.0.0.1/32",), resolver=lambda host, port: ["127.0.0.1", "10.0.0.1"]
    )
    with pytest.raises(BlockedAddressError):
        fetch(f"http://mixed.test:{listener.port}/", policy)
    assert tcp_attempts(connection_attempts) == []


@pytest.mark.parametrize(
    ("errno", "expected"), [(socket.EAI_NONAME, PermanentFetchError), (socket.EAI_AGAIN, TransientFetchError)]
)
def test_dns_failures_are_classified(errno: int, expected: type[Exception]) -> None:
    def failing_resolver(host: str, port: int) -> list[str]:
        raise socket.gaierror(errno, "lookup failed")

    with pytest.raises(expected) as caught:
        fetch("http://nowhere.test/", FetchPolicy(resolver=failing_resolver))
    assert "couldn't" in caught.value.message


def _self_signed(tmp_path: Path, hostname: str) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_tls_verifies_the_hostname_while_connecting_to_the_pinned_address(tmp_path: Path) -> None:
    cert_path, key_path = _self_signed(tmp_path, "site.test")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)
    sni_names: list[str | None] = []
    server_context.sni_callback = lambda sock, name, ctx: sni_names.append(name)  # type: ignore[assignment,func-returns-value]
    client_context = ssl.create_default_context(cafile=str(cert_path))
    policy = FetchPolicy(
        allowed_networks=("127.0.0.1/32",), verify=client_context, resolver=lambda host, port: ["127.0.0.1"]
    )
    with serving({"/": Reply(200, "over tls")}, ssl_context=server_context) as server:
        result = fetch(f"https://site.test:{server.port}/", policy)
        assert result.body == b"over tls"
        assert sni_names == ["site.test"]
        assert server.requests[0].headers["Host"] == f"site.test:{server.port}"
        # The same server by its IP: the certificate doesn't name it, so verification fails.
        with pytest.raises(PermanentFetchError, match="certificate"):
            fetch(f"https://127.0.0.1:{server.port}/", policy)


# Redirects ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/to-metadata", "/to-private", "/to-ipv6-mapped"])
def test_redirects_to_private_addresses_are_refused_before_connecting(
    path: str, faults: LocalServer, connection_attempts: list[object]
) -> None:
    with pytest.raises(BlockedAddressError):
        fetch(faults.url(path), LOCAL)
    assert {a[0] for a in tcp_attempts(connection_attempts)} == {"127.0.0.1"}


def test_redirect_to_metadata_is_refused_even_when_private_networks_are_allowed(
    faults: LocalServer, connection_attempts: list[object]
) -> None:
    with pytest.raises(BlockedAddressError, match="metadata"):
        fetch(faults.url("/to-metadata"), PRIVATE_OK)
    assert {a[0] for a in tcp_attempts(connection_attempts)} == {"127.0.0.1"}


def test_redirects_are_followed_and_recorded(faults: LocalServer) -> None:
    result = fetch(faults.url("/to-ok"), LOCAL)
    assert (result.status, result.body) == (200, b"<p>hello</p>")
    assert result.final_url == faults.url("/ok")
    assert result.redirects == (faults.url("/ok"),)


def test_redirect_loops_stop_at_the_limit(faults: LocalServer) -> None:
    with pytest.raises(PermanentFetchError, match="redirects too many times"):
        fetch(faults.url("/loop"), LOCAL)
    assert faults.paths_requested().count("/loop") >= LOCAL.max_redirects + 1


def test_same_host_only_refuses_a_redirect_to_another_host(listener: LocalServer) -> None:
    other = f"http://localhost:{listener.port}/"
    with serving({"/away": redirect(other)}) as server:
        with pytest.raises(PermanentFetchError, match="another website"):
            fetch(server.url("/away"), PRIVATE_OK, same_host_redirects_only=True)
        assert fetch(server.url("/away"), PRIVATE_OK).body == b"secret"


def test_credentials_are_not_carried_to_another_host(listener: LocalServer) -> None:
    with serving({"/away": redirect(f"http://localhost:{listener.port}/")}) as server:
        fetch(server.url("/away"), PRIVATE_OK, headers={"Authorization": "Bearer s3cret", "X-Trace": "1"})
        assert server.requests[-1].headers["Authorization"] == "Bearer s3cret"
    assert "Authorization" not in listener.requests[-1].headers
    assert listener.requests[-1].headers["X-Trace"] == "1"


def test_same_site_ignores_the_www_prefix_only() -> None:
    assert same_site("Example.com", "www.example.com")
    assert not same_site("example.com", "docs.example.com")
    assert not same_site("example.com", "example.com.evil.test")


# Failure classes ------------------------------------------------------------------------------------------


def test_429_with_retry_after_seconds(faults: LocalServer) -> None:
    with pytest.raises(RateLimitedError) as caught:
        fetch(faults.url("/429-seconds"), LOCAL)
    assert caught.value.retry_after_s == 7
    assert caught.value.message == "The site is rate-limiting us; we'll retry automatically."
    assert isinstance(caught.value, TransientFetchError)


def test_429_with_retry_after_as_http_date(faults: LocalServer) -> None:
    with pytest.raises(RateLimitedError) as caught:
        fetch(faults.url("/429-date"), LOCAL)
    assert caught.value.retry_after_s is not None
    assert 100 <= caught.value.retry_after_s <= 121


def test_429_without_retry_after(faults: LocalServer) -> None:
    with pytest.raises(RateLimitedError) as caught:
        fetch(faults.url("/429-bare"), LOCAL)
    assert caught.value.retry_after_s is None


def test_503_saying_too_many_requests_is_rate_limiting(faults: LocalServer) -> None:
    with pytest.raises(RateLimitedError):
        fetch(faults.url("/503-too-many"), LOCAL)


@pytest.mark.parametrize("path", ["/500", "/502", "/503"])
def test_server_errors_are_transient(path: str, faults: LocalServer) -> None:
    with pytest.raises(TransientFetchError) as caught:
        fetch(faults.url(path), LOCAL)
    assert not isinstance(caught.value, RateLimitedError)
    assert caught.value.status == int(path[1:])
    assert "retry automatically" in caught.value.message


def test_503_keeps_its_retry_after(faults: LocalServer) -> None:
    with pytest.raises(TransientFetchError) as caught:
        fetch(faults.url("/503"), LOCAL)
    assert caught.value.retry_after_s == 30


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_client_errors_are_permanent(status: int, faults: LocalServer) -> None:
    with pytest.raises(PermanentFetchError) as caught:
        fetch(faults.url(f"/{status}"), LOCAL)
    assert caught.value.status == status
    assert f"{status}" in caught.value.detail


def test_a_slow_answer_times_out_as_transient(faults: LocalServer) -> None:
    policy = FetchPolicy(allowed_networks=("127.0.0.1/32",), read_timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(TransientFetchError, match="too long"):
        fetch(faults.url("/slow"), policy)
    assert time.monotonic() - started < 2


def test_a_trickling_body_hits_the_total_time_limit(faults: LocalServer) -> None:
    policy = FetchPolicy(allowed_networks=("127.0.0.1/32",), read_timeout_s=2, total_timeout_s=1)
    started = time.monotonic()
    with pytest.raises(TransientFetchError, match="too long"):
        fetch(faults.url("/drip"), policy)
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("path", ["/reset", "/reset-mid-body"])
def test_connection_resets_are_transient(path: str, faults: LocalServer) -> None:
    with pytest.raises(TransientFetchError, match="interrupted"):
        fetch(faults.url(path), LOCAL)


def test_connection_refused_is_permanent() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PermanentFetchError, match="refused"):
        fetch(f"http://127.0.0.1:{port}/", LOCAL)


def test_a_body_declared_too_large_is_refused_before_reading(faults: LocalServer) -> None:
    policy = FetchPolicy(allowed_networks=("127.0.0.1/32",), max_bytes=10_000)
    with pytest.raises(TooLargeError) as caught:
        fetch(faults.url("/big-declared"), policy)
    assert "Content-Length" in caught.value.detail
    assert isinstance(caught.value, PermanentFetchError)


def test_an_endless_body_is_cut_off_at_the_limit(faults: LocalServer) -> None:
    policy = FetchPolicy(allowed_networks=("127.0.0.1/32",), max_bytes=1_000_000)
    started = time.monotonic()
    with pytest.raises(TooLargeError, match="larger than"):
        fetch(faults.url("/endless"), policy)
    assert time.monotonic() - started < 3


def test_a_gzip_bomb_fails_cleanly_without_inflating_in_memory(faults: LocalServer) -> None:
    policy = FetchPolicy(allowed_networks=("127.0.0.1/32",), max_decoded_bytes=2_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(TooLargeError) as caught:
            fetch(faults.url("/bomb"), policy)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "decompression" in caught.value.detail
    assert peak < 8_000_000  # the bomb is 64 MB decoded; we held a few steps of it at most


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/gzip", b"<p>zipped</p>"),
        ("/deflate-no-headers", b'<feed xmlns="http://www.w3.org/2005/Atom"></feed>\n'),
        ("/deflate-not-compressed", b"<feed><title>deflate</title></feed>\n"),
        ("/gzip-not-compressed", b"<feed><title>gzip</title></feed>"),
    ],
)
def test_content_encodings_and_their_usual_mislabels_are_decoded(
    path: str, expected: bytes, faults: LocalServer
) -> None:
    assert fetch(faults.url(path), LOCAL).body == expected


def test_a_corrupt_gzip_body_is_a_clear_permanent_error(faults: LocalServer) -> None:
    with pytest.raises(PermanentFetchError, match="damaged"):
        fetch(faults.url("/gzip-corrupt"), LOCAL)


# Requests and results -------------------------------------------------------------------------------------


def test_requests_name_the_product_in_the_user_agent(faults: LocalServer) -> None:
    fetch(faults.url("/ok"), LOCAL)
    assert faults.requests[-1].headers["User-Agent"] == USER_AGENT
    assert USER_AGENT.startswith("GroundedBot/")


def test_conditional_requests_come_back_not_modified(faults: LocalServer) -> None:
    first = fetch(faults.url("/conditional"), LOCAL)
    assert (first.status, first.not_modified, first.headers["etag"]) == (200, False, '"v1"')
    again = fetch(faults.url("/conditional"), LOCAL, headers={"If-None-Match": first.headers["etag"]})
    assert (again.status, again.not_modified, again.body) == (304, True, b"")


def test_declared_charset_is_reported_and_used(faults: LocalServer) -> None:
    result = fetch(faults.url("/latin1"), LOCAL)
    assert result.encoding is not None and result.encoding.lower() == "iso-8859-1"
    assert result.text() == "café"


def test_error_statuses_can_come_back_as_results(faults: LocalServer) -> None:
    result = fetch(faults.url("/404"), LOCAL, raise_for_status=False)
    assert (result.status, result.body) == (404, b"missing")


def test_retry_after_parsing() -> None:
    now = time.time()
    assert parse_retry_after("120") == 120
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after(email.utils.formatdate(now + 60, usegmt=True), now=now) == pytest.approx(
        60, abs=1
    )
    assert parse_retry_after(email.utils.formatdate(now - 60, usegmt=True), now=now) == 0


def test_a_dns_lookup_that_hangs_is_a_transient_failure_after_the_timeout() -> None:
    release = threading.Event()

    def hanging_resolver(host: str, port: int) -> list[str]:
        release.wait(10)
        return ["127.0.0.1"]

    started = time.monotonic()
    try:
        with pytest.raises(TransientFetchError) as caught:
            fetch("http://slow-dns.test/", FetchPolicy(resolver=hanging_resolver, dns_timeout_s=0.3))
    finally:
        release.set()
    assert time.monotonic() - started < 3
    assert "took longer than 0.3 s" in caught.value.detail
