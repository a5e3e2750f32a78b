"""One chat turn: retrieve, gate, answer (extractively or with a model), cite, and record it.

`run_turn` yields events that both the JSON endpoint and the SSE stream are built from:
  tool.start / tool.complete   a search of the knowledge (inject mode: one, before the model)
  knowledge.hits               the passages themselves, only when a server-side decision allows it
                               (each of these three carries the search's `call_id`; the gate's own search
                               in tool mode is the call "gate", reported only where passages may be shown)
  text.delta                   answer text as it is produced
  error                        the turn failed; nothing more follows
  done                         the final answer, sources, conversation id and metadata
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from agents import gate, prompts
from agents.answer import ExtractiveAnswer, extractive_answer
from agents.answer.condense import condense, last_search_query, standalone_question
from agents.configuration import agent_search_params, chat_model_for, system_prompt
from agents.llm.base import ChatModel, LLMError, TextDelta, ToolCall
from agents.models import Agent, Conversation, Message
from agents.prompts import NumberedPassage
from ingestion.kinds.registry import get_kind
from retrieval.services import Passage, search_passages
from retrieval.stores.base import InvalidFilter
from sources.tenancy import workspace_scope

log = logging.getLogger(__name__)

HISTORY_MESSAGES = 10
MAX_TOOL_ROUNDS = 3
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_knowledge",
        "description": "Search this website's knowledge base. Returns numbered passages to cite.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for."}},
            "required": ["query"],
        },
    },
}


class RetrievalUnavailable(RuntimeError):
    pass


@dataclass
class TurnContext:
    agent: Agent
    conversation: Conversation
    user_text: str
    audiences: list[str]
    show_hits: bool
    show_errors: bool = False
    answerer: Callable[[str, list[NumberedPassage]], ExtractiveAnswer] = extractive_answer
    numbered: list[NumberedPassage] = field(default_factory=list)
    searches: list[list[Passage]] = field(default_factory=list)
    call_ids: set[str] = field(default_factory=set)
    metadata: dict[str, Any] = field(default_factory=lambda: {"grounded": True})


def run_turn(
    *,
    agent: Agent,
    conversation: Conversation,
    user_text: str,
    audiences: list[str],
    show_hits: bool = False,
    show_errors: bool = False,
    answerer: Callable[[str, list[NumberedPassage]], ExtractiveAnswer] = extractive_answer,
) -> Iterator[dict[str, Any]]:
    """Answer one user message. `audiences`, `show_hits` and `show_errors` (why a turn failed, for the
    agent's admins) come from server-side decisions only; `answerer` is the built-in answerer used when no
    model is configured (evaluation compares two)."""
    with workspace_scope(agent.workspace_id):
        turn = TurnContext(agent, conversation, user_text, audiences, show_hits, show_errors, answerer)
        history = _history(conversation)
        previous_query = last_search_query(conversation)
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=user_text)
        model = chat_model_for(agent)
        try:
            if agent.retrieval_mode == Agent.RetrievalMode.TOOL and model is not None:
                answer = yield from _tool_mode(turn, model, history, previous_query)
            else:
                answer = yield from _inject_mode(turn, model, history, previous_query)
        except InvalidFilter as exc:
            yield _error(turn, "This question could not be searched safely.", str(exc))
            return
        except LLMError as exc:
            yield _error(turn, exc.message, exc.detail)
            return
        sources = _sources(turn, answer)
        Message.objects.create(
            conversation=conversation,
            role=Message.Role.ASSISTANT,
            content=answer,
            sources=sources,
            metadata=turn.metadata,
        )
        Conversation.objects.filter(id=conversation.id).update(updated_at=timezone.now())
        yield {
            "type": "done",
            "answer": answer,
            "sources": sources if agent.sources_display != Agent.SourcesDisplay.NONE else [],
            "conversation_id": str(conversation.id),
            "metadata": turn.metadata,
        }


def _inject_mode(
    turn: TurnContext, model: ChatModel | None, history: list[dict], previous_query: str | None
) -> Generator[dict, None, str]:  # yields the turn's events, returns the answer
    query, condensed = standalone_question(turn.user_text, model, history, previous_query)
    turn.metadata.update(condensed)
    passages = yield from _search(turn, query)
    if turn.metadata.get("grounded") is False and turn.agent.gate_enabled:
        # Retrieval is down and the agent must stay on topic: refuse rather than answer ungrounded.
        return (yield from _emit_text(gate.refusal(turn.agent, turn.user_text, model)))
    if not gate.is_backed(turn.agent, turn.searches):
        turn.metadata.update(offtopic=True, grounded=False)
        return (yield from _emit_text(gate.refusal(turn.agent, turn.user_text, model)))
    turn.numbered = prompts.number_passages(passages, turn.agent.context_budget)
    if model is None:
        answer = turn.answerer(query, turn.numbered)
        turn.metadata["answerer"] = "extractive"
        if not answer.cited:
            # Nothing in the passages answers it: no sources, and not presented as grounded.
            turn.numbered = []
            turn.metadata["grounded"] = False
        return (yield from _emit_text(answer.text))
    system = prompts.build_system_prompt(
        system_prompt(turn.agent), turn.agent.context_template, turn.numbered
    )
    messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": turn.user_text}]
    turn.metadata["answerer"] = "model"
    parts = []
    for event in model.stream(messages):
        if isinstance(event, TextDelta):
            parts.append(event.text)
            yield {"type": "text.delta", "delta": event.text}
    return "".join(parts)


def _tool_mode(
    turn: TurnContext, model: ChatModel, history: list[dict], previous_query: str | None
) -> Generator[dict, None, str]:  # yields the turn's events, returns the answer
    # The gate may pass on the user's message alone (a follow-up with its topic added); otherwise the
    # model's own searches must back it, and until they do its text is held back.
    if turn.agent.gate_enabled:
        # Reported (as the call "gate") only where passages may be shown: a visitor learns nothing of it.
        query = condense(turn.user_text, previous_query)
        yield from _search(turn, query, record=turn.show_hits, call_id=GATE_CALL_ID)
    backed = gate.is_backed(turn.agent, turn.searches)
    system = prompts.build_system_prompt(system_prompt(turn.agent), "", None)
    messages: list[dict] = [
        {"role": "system", "content": system},
        *history,
        {"role": "user", "content": turn.user_text},
    ]
    turn.metadata["answerer"] = "model"
    held: list[str] = []
    for _round in range(MAX_TOOL_ROUNDS + 1):
        calls: list[ToolCall] = []
        text: list[str] = []
        tools = [SEARCH_TOOL] if _round < MAX_TOOL_ROUNDS else None
        for event in model.stream(messages, tools=tools):
            if isinstance(event, ToolCall):
                calls.append(event)
            elif backed:
                text.append(event.text)
                yield {"type": "text.delta", "delta": event.text}
            else:
                held.append(event.text)
                text.append(event.text)
        if not calls:
            if not backed:
                turn.metadata.update(offtopic=True, grounded=False)
                return (yield from _emit_text(gate.refusal(turn.agent, turn.user_text, model)))
            return "".join(text)
        messages.append(
            {
                "role": "assistant",
                "content": "".join(text) or None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in calls
                ],
            }
        )
        for call in calls:
            if call.name != "search_knowledge":
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "Unknown tool."})
                continue
            query = str(call.arguments.get("query") or turn.user_text)[:500]
            passages = yield from _search(turn, query, call_id=call.id)
            numbered = prompts.number_passages(
                passages, turn.agent.context_budget, start=len(turn.numbered) + 1
            )
            turn.numbered.extend(numbered)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": prompts.render_context(numbered)}
            )
        backed = backed or gate.is_backed(turn.agent, turn.searches)
    return "".join(held) if backed else turn.agent.offtopic_reply


GATE_CALL_ID = "gate"


def _call_id(turn: TurnContext, wanted: str) -> str:
    """The id a search is reported under: the model's own call id when it gave a fresh one, else the
    turn's next "search-N". Unique within the turn, so a client can pair each start with its results."""
    number = len(turn.call_ids) + 1
    while not wanted or wanted in turn.call_ids:
        wanted, number = f"search-{number}", number + 1
    turn.call_ids.add(wanted)
    return wanted


def _search(
    turn: TurnContext, query: str, record: bool = True, call_id: str = ""
) -> Generator[dict, None, list[Passage]]:
    """One knowledge search, recorded in the transcript as a tool call."""
    agent = turn.agent
    # An unreported search takes no id, so the ids a visitor sees give no hint of it.
    call_id = _call_id(turn, call_id) if record else call_id
    if record:
        yield {
            "type": "tool.start",
            "tool": "search_knowledge",
            "call_id": call_id,
            "arguments": {"query": query},
        }
    params = agent_search_params(agent, turn.audiences)
    try:
        passages = search_passages(
            workspace_id=agent.workspace_id, query=query, params=params, agent_id=agent.id
        )
    except InvalidFilter:
        raise
    except Exception as exc:  # the store is down: answer ungrounded, and say so
        log.warning("retrieval failed for agent %s", agent.id, exc_info=True)
        turn.metadata.update(grounded=False, retrieval_error="The knowledge base is unavailable right now.")
        turn.metadata.setdefault("retrieval_error_detail", repr(exc)[:500])
        passages = []
    turn.searches.append(passages)
    if record:
        results = [
            {"chunk_id": p.chunk_id, "title": p.document_title or p.source_title, "score": round(p.score, 4)}
            for p in passages
        ]
        Message.objects.create(
            conversation=turn.conversation,
            role=Message.Role.TOOL,
            tool_name="search_knowledge",
            tool_arguments={"query": query},
            tool_result=results,
            metadata={"call_id": call_id},
        )
        yield {
            "type": "tool.complete",
            "tool": "search_knowledge",
            "call_id": call_id,
            "results": len(passages),
        }
        if turn.show_hits:
            yield {
                "type": "knowledge.hits",
                "call_id": call_id,
                "query": query,
                "hits": [
                    {
                        "title": p.document_title or p.source_title,
                        "url": _link(p),
                        "score": round(p.score, 4),
                        "text": p.text,
                    }
                    for p in passages
                ],
            }
    return passages


def _emit_text(text: str) -> Generator[dict, None, str]:
    # The extractive answer and fixed replies are streamed word by word, like a model's.
    for piece in re.findall(r"\S+\s*", text):
        yield {"type": "text.delta", "delta": piece}
    return text


def _sources(turn: TurnContext, answer: str) -> list[dict]:
    """One source per page, for the passages the answer cites (all given passages when it cites none)."""
    if turn.metadata.get("offtopic"):
        return []
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    chosen = [n for n in turn.numbered if n.number in cited] or ([] if cited else turn.numbered)
    seen: set[int] = set()
    sources = []
    for item in chosen:
        passage = item.passage
        if passage.document_id in seen:
            continue
        seen.add(passage.document_id)
        sources.append(
            {
                "number": item.number,
                "title": passage.document_title or passage.source_title,
                "url": _link(passage),
            }
        )
    return sources


def _link(passage: Passage) -> str | None:
    return passage.url if passage.url and get_kind(passage.source_kind).cites_urls else None


def _history(conversation: Conversation) -> list[dict]:
    rows = list(
        conversation.messages.filter(role__in=[Message.Role.USER, Message.Role.ASSISTANT]).order_by(
            "-created_at", "-id"
        )[:HISTORY_MESSAGES]
    )
    return [{"role": m.role, "content": m.content} for m in reversed(rows)]


VISITOR_ERROR = "Sorry, I can't answer right now. Please try again in a moment."


def _error(turn: TurnContext, message: str, detail: str) -> dict:
    """The reason goes to the conversation log (and the admin's preview); a visitor gets a generic line,
    since the reason can describe the agent's set-up (its model URL, a status code, a refused address)."""
    log.warning("chat turn failed for agent %s: %s (%s)", turn.agent.id, message, detail)
    Message.objects.create(
        conversation=turn.conversation,
        role=Message.Role.ASSISTANT,
        content="",
        metadata={"error": message, "error_detail": detail[:2000]},
    )
    event = {"type": "error", "message": VISITOR_ERROR, "conversation_id": str(turn.conversation.id)}
    if turn.show_errors:
        event.update(message=message, detail=detail[:2000])
    return event
