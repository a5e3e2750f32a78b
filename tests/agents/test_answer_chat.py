"""The built-in answerer through the chat API: no contradiction between the answer, its sources and
`grounded`, whole facts across wrapped lines, and follow-up questions searched with their topic."""

import pytest

from agents.answer.condense import REWRITE_PROMPT
from agents.models import Message
from sources.tenancy import workspace_scope
from tests.agents.conftest import chat, events
from tests.factories import index_text

pytestmark = pytest.mark.django_db


def search_queries(agent, conversation_id: str) -> list[str]:
    with workspace_scope(agent.workspace_id):
        rows = Message.objects.filter(conversation_id=conversation_id, role=Message.Role.TOOL).order_by("id")
        return [m.tool_arguments["query"] for m in rows]


def test_found_nothing_means_no_sources_and_not_grounded_though_passages_were_retrieved(
    client, agent, knowledge
):
    body = chat(client, agent, "Which trains run to Lyon at night?").json()
    assert "couldn't find anything" in body["answer"]
    assert body["sources"] == []
    assert body["metadata"]["grounded"] is False

    stream = events(chat(client, agent, "Which trains run to Lyon at night?", stream=True))
    searched = next(e for e in stream if e["type"] == "tool.complete")
    assert searched["results"] > 0  # the search found passages; none of them answers
    done = stream[-1]
    assert done["type"] == "done" and done["sources"] == [] and done["metadata"]["grounded"] is False


def test_an_answer_with_sources_states_what_they_say(client, agent, knowledge):
    body = chat(client, agent, "Which countries do you ship to?").json()
    assert "We ship to Canada, Mexico and the United States." in body["answer"]
    assert [source["title"] for source in body["sources"]] == ["Shipping"]
    assert body["metadata"]["grounded"] is True


def test_a_fact_wrapped_across_lines_is_answered_whole(client, workspace, agent):
    index_text(
        workspace,
        agent,
        "Returns",
        "Returns are accepted within 30\ndays of purchase, with the receipt.\n\nRefunds take five days.",
    )
    body = chat(client, agent, "How long do I have to return something?").json()
    assert "Returns are accepted within 30 days of purchase, with the receipt." in body["answer"]
    assert body["sources"][0]["title"] == "Returns"


def test_a_follow_up_is_searched_with_the_previous_questions_topic(client, agent, knowledge):
    first = chat(client, agent, "Do you ship to Canada?").json()
    conversation = first["conversation_id"]
    follow_up = {"conversation_id": conversation}
    second = chat(client, agent, "what about express delivery?", body=follow_up).json()
    queries = search_queries(agent, conversation)
    assert queries[0] == "Do you ship to Canada?"
    assert queries[1].startswith("what about express delivery?") and "Canada" in queries[1]
    assert second["metadata"]["condensed_by"] == "rules"
    assert "Express delivery takes two days." in second["answer"]

    third = chat(
        client, agent, "How should I descale the kettle?", body={"conversation_id": conversation}
    ).json()
    assert search_queries(agent, conversation)[2] == "How should I descale the kettle?"
    assert "condensed_by" not in third["metadata"]


def rewriting_provider(rewrite: dict):
    def reply(body: dict) -> dict:
        if body["messages"][0]["content"] == REWRITE_PROMPT:
            return rewrite
        return {"content": "Express delivery takes two days [1]."}

    return reply


def test_with_a_model_the_model_rewrites_the_follow_up(client, llm_agent, knowledge, provider):
    provider.chat = rewriting_provider({"content": "How long does express delivery to Canada take?"})
    first = chat(client, llm_agent, "Do you ship to Canada?").json()
    assert len(provider.chat_requests()) == 1  # a first question needs no rewrite
    conversation = first["conversation_id"]
    second = chat(client, llm_agent, "and express?", body={"conversation_id": conversation}).json()
    rewrite_request = provider.chat_requests()[1]
    assert rewrite_request["messages"][0]["content"] == REWRITE_PROMPT
    assert "Do you ship to Canada?" in rewrite_request["messages"][1]["content"]
    assert search_queries(llm_agent, conversation)[1] == "How long does express delivery to Canada take?"
    assert second["metadata"]["condensed_by"] == "model"


def test_a_failing_rewrite_falls_back_to_the_rules_and_says_so(client, llm_agent, knowledge, provider):
    provider.chat = rewriting_provider({"status": 500})
    first = chat(client, llm_agent, "Do you ship to Canada?").json()
    conversation = first["conversation_id"]
    second = chat(client, llm_agent, "and express?", body={"conversation_id": conversation}).json()
    assert "Canada" in search_queries(llm_agent, conversation)[1]
    assert second["metadata"]["condensed_by"] == "rules"
    assert second["metadata"]["condense_error"]
    assert second["answer"] == "Express delivery takes two days [1]."
