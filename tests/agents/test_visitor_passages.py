"""A host's signed-in staff may see the passages behind an answer and the gate's own search, when the host
says so in the visitor token it signs (`passages: true`); anonymous visitors, tokens without the claim and
forged or expired tokens never do, in the JSON answer or the stream."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from agents.visitor import sign, verify
from sources.tenancy import workspace_scope
from tests.agents.conftest import chat, events

pytestmark = pytest.mark.django_db

QUESTION = "How long is the kettle warranty?"


@pytest.fixture
def gated_tool_agent(llm_agent, provider):
    """Tool mode with the gate on: the gate searches first (the call "gate"), then the model once."""

    def script(body):
        if any(m["role"] == "tool" for m in body["messages"]):
            return {"content": "Two years [1]."}
        return {"tool_calls": [{"name": "search_knowledge", "arguments": {"query": "kettle warranty"}}]}

    provider.chat = script
    with workspace_scope(llm_agent.workspace_id):
        llm_agent.retrieval_mode = "tool"
        llm_agent.min_score = 0.05
        llm_agent.offtopic_reply = "I only know about kettles."
        llm_agent.save()
    return llm_agent


def staff_token(workspace, **extra) -> str:
    return sign(workspace.visitor_secret, user_id="staff-1", audiences=[], passages=True, **extra)


def hand_signed(secret: str, claims: dict) -> str:
    """A token signed as a host would, with claims sign() would not write."""
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    digest = hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest()
    return f"{payload}.{base64.urlsafe_b64encode(digest).rstrip(b'=').decode()}"


def test_the_claim_is_read_only_as_the_json_literal_true(workspace):
    secret = workspace.visitor_secret
    later = int(time.time()) + 60
    assert verify(secret, staff_token(workspace)).passages is True
    assert verify(secret, sign(secret, user_id="u", audiences=["staff"])).passages is False
    for loose in ("true", 1, "yes", None):
        token = hand_signed(secret, {"sub": "u", "aud": [], "exp": later, "passages": loose})
        assert verify(secret, token).passages is False, loose


def test_staff_see_the_gate_call_and_passages_in_the_json_answer(
    client, workspace, gated_tool_agent, knowledge
):
    body = chat(client, gated_tool_agent, QUESTION, HTTP_X_VISITOR_TOKEN=staff_token(workspace)).json()
    assert body["answer"] == "Two years [1]."
    assert [s["call_id"] for s in body["searches"]] == ["gate", "call_0"]
    gate = body["searches"][0]
    assert gate["query"] == QUESTION
    assert "two-year warranty" in gate["hits"][0]["text"]
    assert set(gate["hits"][0]) == {"title", "url", "score", "text"}


def test_staff_see_the_gate_call_and_passages_in_the_stream(client, workspace, gated_tool_agent, knowledge):
    response = chat(
        client, gated_tool_agent, QUESTION, stream=True, HTTP_X_VISITOR_TOKEN=staff_token(workspace)
    )
    stream = events(response)
    searched = [(e["type"], e["call_id"]) for e in stream if "call_id" in e]
    assert searched[:3] == [("tool.start", "gate"), ("tool.complete", "gate"), ("knowledge.hits", "gate")]
    hits = [e for e in stream if e["type"] == "knowledge.hits"]
    assert [h["call_id"] for h in hits] == ["gate", "call_0"]
    assert "two-year warranty" in hits[1]["hits"][0]["text"]
    assert stream[-1]["type"] == "done"


def test_anonymous_visitors_and_tokens_without_the_claim_see_no_passages(
    client, workspace, gated_tool_agent, knowledge
):
    plain = sign(workspace.visitor_secret, user_id="u-1", audiences=["role:staff"])
    for headers in ({}, {"HTTP_X_VISITOR_TOKEN": plain}):
        body = chat(client, gated_tool_agent, QUESTION, **headers).json()
        assert body["answer"] == "Two years [1]."
        assert "searches" not in body
        stream = events(chat(client, gated_tool_agent, QUESTION, stream=True, **headers))
        assert "knowledge.hits" not in [e["type"] for e in stream]
        assert "gate" not in [e.get("call_id") for e in stream]
        assert all("text" not in e for e in stream if e["type"].startswith("tool."))


def test_nothing_in_the_body_asks_for_passages(client, workspace, gated_tool_agent, knowledge):
    smuggled = {"show_hits": True, "passages": True}
    body = chat(client, gated_tool_agent, QUESTION, body=smuggled).json()
    assert "searches" not in body
    stream = events(chat(client, gated_tool_agent, QUESTION, stream=True, body=smuggled))
    assert "knowledge.hits" not in [e["type"] for e in stream]


def test_forged_and_expired_staff_tokens_are_refused(client, workspace, other_workspace, gated_tool_agent):
    forged = staff_token(other_workspace)
    expired = staff_token(workspace, ttl_s=-10)
    tampered = hand_signed(
        "not-the-secret", {"sub": "u", "aud": [], "exp": int(time.time()) + 60, "passages": True}
    )
    for token in (forged, expired, tampered):
        for stream in (False, True):
            response = chat(client, gated_tool_agent, QUESTION, stream=stream, HTTP_X_VISITOR_TOKEN=token)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "invalid_visitor_token"
