"""Every tool.start, tool.complete and knowledge.hits event carries a call_id; the gate's own search in tool
mode is the call "gate", shown in the owner's preview and never to an anonymous visitor."""

from __future__ import annotations

import pytest

from agents.models import Message
from sources.tenancy import workspace_scope
from tests.agents.conftest import chat, events

pytestmark = pytest.mark.django_db

SEARCH_EVENTS = ("tool.start", "tool.complete", "knowledge.hits")


def calls(stream: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["call_id"]) for e in stream if e["type"] in SEARCH_EVENTS]


def preview(client, agent, message):
    path = f"/app/agents/{agent.id}/preview/chat/stream"
    return client.post(path, {"message": message}, content_type="application/json")


@pytest.fixture
def gated_tool_agent(llm_agent, provider):
    """Tool mode, gate on; the model searches twice, reusing its call id (as some providers do)."""

    def script(body):
        searched = sum(1 for m in body["messages"] if m["role"] == "tool")
        if searched < 2:
            return {
                "tool_calls": [{"name": "search_knowledge", "arguments": {"query": f"warranty {searched}"}}]
            }
        return {"content": "Two years [1]."}

    provider.chat = script
    with workspace_scope(llm_agent.workspace_id):
        llm_agent.retrieval_mode = "tool"
        llm_agent.min_score = 0.05
        llm_agent.offtopic_reply = "I only know about kettles."
        llm_agent.save()
    return llm_agent


def test_inject_mode_pairs_start_and_complete_and_stores_the_id(client, agent, knowledge):
    stream = events(chat(client, agent, "How long is the kettle warranty?", stream=True))
    assert calls(stream) == [("tool.start", "search-1"), ("tool.complete", "search-1")]
    with workspace_scope(agent.workspace_id):
        stored = Message.objects.get(role=Message.Role.TOOL)
    assert stored.metadata == {"call_id": "search-1"}


def test_an_anonymous_visitor_never_sees_the_gate_call(client, gated_tool_agent, knowledge):
    stream = events(chat(client, gated_tool_agent, "How long is the kettle warranty?", stream=True))
    assert stream[-1]["answer"] == "Two years [1]."
    # The model's first call keeps its id; its second, reusing "call_0", gets a fresh one.
    assert calls(stream) == [
        ("tool.start", "call_0"),
        ("tool.complete", "call_0"),
        ("tool.start", "search-2"),
        ("tool.complete", "search-2"),
    ]
    with workspace_scope(gated_tool_agent.workspace_id):
        stored = list(Message.objects.filter(role=Message.Role.TOOL).values_list("metadata", flat=True))
    assert stored == [{"call_id": "call_0"}, {"call_id": "search-2"}]  # the gate's search is not stored


def test_the_owner_preview_sees_the_gate_call_with_its_passages(client, owner, gated_tool_agent, knowledge):
    client.force_login(owner)
    stream = events(preview(client, gated_tool_agent, "How long is the kettle warranty?"))
    assert calls(stream)[:3] == [
        ("tool.start", "gate"),
        ("tool.complete", "gate"),
        ("knowledge.hits", "gate"),
    ]
    assert [c for _, c in calls(stream)[3:]] == ["call_0"] * 3 + ["search-3"] * 3
    gate_hits = next(e for e in stream if e["type"] == "knowledge.hits")
    assert gate_hits["query"] == "How long is the kettle warranty?"
    assert "two-year warranty" in gate_hits["hits"][0]["text"]
