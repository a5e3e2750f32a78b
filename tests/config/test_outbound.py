"""Calls to tenant-configured URLs: the crawler's address policy, pinned addresses, time and size limits.

Real servers on 127.0.0.1 stand in for the outside world; every socket connect is recorded, and one to
anything but loopback fails the test, so "refused" means nothing was sent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from agents.llm.base import LLMError, TextDelta
from agents.llm.openai import OpenAIChatModel
from config.outbound import (
    OutboundBlocked,
    OutboundClient,
    OutboundPolicy,
    OutboundTimeout,
    OutboundTooLarge,
    OutboundUnreachable,
    check_outbound_url,
    outbound_policy,
)
from tests.fakes.openai_server import FakeProvider, openai_compatible_server
from tests.ingestion.crawl.servers import (
    LocalServer,
    Reply,
    endless_body,
    guard_connections,
    redirect,
    serving,
    slow_drip,
    slow_headers,
    tcp_attempts,
)

LOOPBACK_OK = OutboundPolicy(allowed_networks=("127.0.0.0/8",))
STRICT = OutboundPolicy()  # the crawler's default: no private network at all


@pytest.fixture
def connection_attempts(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    return guard_connections(monkeypatch)


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with openai_compatible_server(FakeProvider()) as running:
        yield running


@pytest.fixture
def site() -> Iterator[LocalServer]:
    routes = {
        "/ok": Reply(200, '{"ok": true}', content_type="application/json"),
        "/to-private": redirect("http://10.0.0.1/admin", 307),
        "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/iam/security-credentials/", 307),
        "/to-ok": redirect("/ok", 307),
        "/loop": redirect("/loop", 307),
        "/big-declared": Reply(200, b"z" * 50_000),
        "/endless": endless_body,
        "/drip": slow_drip(4),
        "/slow": slow_headers(3),
    }
    with serving(routes) as server:
        yield server


def _request(url: str, policy: OutboundPolicy) -> tuple[int, bytes]:
    with OutboundClient(policy) as client:
        return client.request("POST", url, json={"hello": "world"})


# Refused: nothing is sent ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:{port}/ok",
        "http://localhost:{port}/ok",
        "http://[::1]:{port}/ok",
        "http://[::ffff:127.0.0.1]:{port}/ok",
        "http://2130706433:{port}/ok",
        "http://0x7f.1:{port}/ok",
    ],
)
def test_loopback_is_refused_unless_the_operator_allows_it(
    template: str, site: LocalServer, connection_attempts: list[object]
) -> None:
    url = template.format(port=site.port)
    with pytest.raises(OutboundBlocked, match="private or reserved network") as caught:
        _request(url, STRICT)
    assert tcp_attempts(connection_attempts) == [] and site.connections == 0
    assert "127.0.0.1" in caught.value.detail or "::1" in caught.value.detail
    assert _request(site.url("/ok"), LOOPBACK_OK)[0] == 200  # the same server, once the operator allows it


@pytest.mark.parametrize("url", ["http://10.0.0.1/v1", "http://172.16.5.4/v1", "http://192.168.1.1:8080/v1"])
def test_private_addresses_are_refused(url: str, connection_attempts: list[object]) -> None:
    with pytest.raises(OutboundBlocked, match="private or reserved network"):
        _request(url, LOOPBACK_OK)
    with pytest.raises(OutboundBlocked):
        check_outbound_url(url, LOOPBACK_OK)
    assert tcp_attempts(connection_attempts) == []


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://169.254.170.2/"]
)
def test_metadata_addresses_are_refused_even_when_private_networks_are_allowed(
    url: str, connection_attempts: list[object]
) -> None:
    with pytest.raises(OutboundBlocked, match="cloud metadata") as caught:
        _request(url, OutboundPolicy(allow_private_networks=True))
    assert "metadata" in caught.value.detail
    assert tcp_attempts(connection_attempts) == []


@pytest.mark.parametrize("answers", [["10.1.2.3"], ["93.184.216.34", "192.168.0.7"], ["169.254.169.254"]])
def test_a_name_that_resolves_to_a_private_address_is_refused(
    answers: list[str], connection_attempts: list[object]
) -> None:
    policy = OutboundPolicy(resolver=lambda host, port: answers)
    with pytest.raises(OutboundBlocked) as caught:
        _request("https://models.example.com/v1/chat/completions", policy)
    assert "models.example.com" in caught.value.detail
    with pytest.raises(OutboundBlocked):
        check_outbound_url("https://models.example.com/v1", policy)
    assert tcp_attempts(connection_attempts) == []


def test_dns_that_changes_after_the_save_time_check_is_caught_at_call_time(
    site: LocalServer, connection_attempts: list[object]
) -> None:
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # public when saved, loopback when called
    policy = OutboundPolicy(resolver=lambda host, port: next(answers))
    check_outbound_url(f"http://models.example.com:{site.port}/v1", policy)
    with pytest.raises(OutboundBlocked):
        _request(f"http://models.example.com:{site.port}/ok", policy)
    assert tcp_attempts(connection_attempts) == [] and site.connections == 0


@pytest.mark.parametrize(("path", "reason"), [("/to-private", "private"), ("/to-metadata", "metadata")])
def test_a_redirect_to_a_private_or_metadata_address_is_refused(
    path: str, reason: str, site: LocalServer, connection_attempts: list[object]
) -> None:
    with pytest.raises(OutboundBlocked, match=reason):
        _request(site.url(path), OutboundPolicy(allowed_networks=("127.0.0.0/8",)))
    assert {address[0] for address in tcp_attempts(connection_attempts)} == {"127.0.0.1"}
    assert site.paths_requested() == [path]


def test_allowed_redirects_are_followed_and_credentials_stay_with_their_origin(site: LocalServer) -> None:
    with OutboundClient(LOOPBACK_OK) as client:
        status, body = client.request("POST", site.url("/to-ok"), headers={"Authorization": "Bearer sk-1"})
    assert (status, body) == (200, b'{"ok": true}')
    assert site.requests[-1].headers.get("Authorization") == "Bearer sk-1"  # same origin: kept
    with serving({"/away": redirect(site.url("/ok"), 307)}) as other, OutboundClient(LOOPBACK_OK) as client:
        moved = client.request("POST", other.url("/away"), headers={"Authorization": "Bearer sk-2"})
    assert moved[0] == 200
    assert other.requests[-1].headers.get("Authorization") == "Bearer sk-2"
    assert "Authorization" not in site.requests[-1].headers  # another origin (port): dropped
    with pytest.raises(OutboundUnreachable, match="too many"):
        _request(site.url("/loop"), LOOPBACK_OK)


@pytest.mark.parametrize(
    "url", ["ftp://example.com/v1", "file:///etc/passwd", "not a url", "http://user:pw@example.com/v1"]
)
def test_non_web_or_credentialed_urls_are_refused(url: str, connection_attempts: list[object]) -> None:
    with pytest.raises(OutboundBlocked):
        check_outbound_url(url, STRICT)
    assert tcp_attempts(connection_attempts) == []


def test_proxy_variables_in_the_environment_are_not_a_way_around_the_check(
    site: LocalServer, monkeypatch: pytest.MonkeyPatch, connection_attempts: list[object]
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.9.9.9:3128")
    assert _request(site.url("/ok"), LOOPBACK_OK)[0] == 200
    assert {address[0] for address in tcp_attempts(connection_attempts)} == {"127.0.0.1"}


# Limits -------------------------------------------------------------------------------------------------


def test_an_oversized_response_is_refused(site: LocalServer) -> None:
    small = OutboundPolicy(allowed_networks=("127.0.0.0/8",), max_response_bytes=10_000)
    with pytest.raises(OutboundTooLarge, match="larger than") as declared:
        _request(site.url("/big-declared"), small)
    assert "Content-Length 50000" in declared.value.detail
    started = time.monotonic()
    with pytest.raises(OutboundTooLarge) as endless:
        _request(site.url("/endless"), small)
    assert "more than 10000 bytes" in endless.value.detail
    assert time.monotonic() - started < 5
    assert _request(site.url("/big-declared"), LOOPBACK_OK) == (200, b"z" * 50_000)


def test_a_dripping_response_stops_at_the_total_time_limit(site: LocalServer) -> None:
    policy = OutboundPolicy(allowed_networks=("127.0.0.0/8",), read_timeout_s=2.0, total_timeout_s=0.8)
    started = time.monotonic()
    with pytest.raises(OutboundTimeout):
        _request(site.url("/drip"), policy)
    assert time.monotonic() - started < 2.5


def test_a_silent_server_stops_at_the_read_time_limit(site: LocalServer) -> None:
    policy = OutboundPolicy(allowed_networks=("127.0.0.0/8",), read_timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(OutboundTimeout):
        _request(site.url("/slow"), policy)
    assert time.monotonic() - started < 2.5


# The model client goes through it, streaming included ---------------------------------------------------


def _ask(model: OpenAIChatModel) -> str:
    return "".join(
        e.text for e in model.stream([{"role": "user", "content": "hi"}]) if isinstance(e, TextDelta)
    )


def test_the_fake_model_server_is_reached_when_the_operator_allows_loopback(provider: FakeProvider) -> None:
    # The test settings allow 127.0.0.0/8, as the crawler's do.
    model = OpenAIChatModel(base_url=provider.base_url, model="fake-chat", api_key=provider.api_key)
    assert _ask(model) == "Hello from the model."
    assert len(provider.chat_requests()) == 1


@override_settings(OUTBOUND_ALLOWED_NETWORKS=[])
def test_the_model_url_on_loopback_is_refused_by_default_and_nothing_is_sent(
    provider: FakeProvider, connection_attempts: list[object]
) -> None:
    model = OpenAIChatModel(base_url=provider.base_url, model="fake-chat", api_key=provider.api_key)
    with pytest.raises(LLMError, match="model base URL was refused") as caught:
        _ask(model)
    assert "127.0.0.1" in caught.value.detail
    assert provider.requests == [] and tcp_attempts(connection_attempts) == []


def test_an_oversized_model_stream_is_cut_off(provider: FakeProvider) -> None:
    provider.chat = lambda body: {"content": "word " * 5000}  # 25 kB of text, ~100 kB of events
    policy = OutboundPolicy(allowed_networks=("127.0.0.0/8",), max_response_bytes=20_000)
    model = OpenAIChatModel(
        base_url=provider.base_url, model="fake-chat", api_key=provider.api_key, policy=policy
    )
    with pytest.raises(LLMError, match="larger than we accept"):
        _ask(model)
    unlimited = OpenAIChatModel(base_url=provider.base_url, model="fake-chat", api_key=provider.api_key)
    assert _ask(unlimited) == "word " * 5000


# Settings ----------------------------------------------------------------------------------------------


@override_settings(CRAWL_ALLOW_PRIVATE_NETWORKS=False, CRAWL_ALLOWED_NETWORKS=["10.1.0.0/16"])
def test_the_policy_follows_the_crawlers_unless_set() -> None:
    with override_settings(OUTBOUND_ALLOW_PRIVATE_NETWORKS=None, OUTBOUND_ALLOWED_NETWORKS=None):
        policy = outbound_policy()
        assert (policy.allow_private_networks, policy.allowed_networks) == (False, ("10.1.0.0/16",))
    with override_settings(OUTBOUND_ALLOW_PRIVATE_NETWORKS=True, OUTBOUND_ALLOWED_NETWORKS=[]):
        policy = outbound_policy()
        assert (policy.allow_private_networks, policy.allowed_networks) == (True, ())
    with override_settings(OUTBOUND_MAX_RESPONSE_BYTES=123, OUTBOUND_TOTAL_TIMEOUT=7.0):
        assert (outbound_policy().max_response_bytes, outbound_policy().total_timeout_s) == (123, 7.0)
