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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents import gate, prompts
from agents.answer import ExtractiveAnswer, extractive_answer
from agents.answer.condense import condense, last_search_query, standalone_question
from agents.llm.base import ChatModel, LLMError, TextDelta, ToolCall
from agents.llm.openai import OpenAIChatModel
from agents.models import Agent, Conversation, Message
from agents.prompts import NumberedPassage
from ingestion.kinds.registry import get_kind
from retrieval.services import Passage, SearchParams, search_passages
from retrieval.stores.base import InvalidFilter
from sources import quotas
from sources.models import Workspace
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


def chat_model_for(agent: Agent) -> ChatModel | None:
    if not agent.uses_llm:
        return None
    return OpenAIChatModel(base_url=agent.llm_base_url, model=agent.llm_model, api_key=agent.llm_api_key)


def agent_create(*, workspace: Workspace, name: str) -> Agent:
    """Raises QuotaExceeded when the workspace's plan has all its agents already."""
    with workspace_scope(workspace.id), transaction.atomic():
        quotas.check_agents(workspace)  # holds the workspace until the new agent is committed
        return Agent.objects.create(name=name.strip()[:200])


def agent_delete(*, agent: Agent) -> int:
    """Delete an agent with its sources (through source_delete, so no vector point, posting or stored
    file is left behind), conversations and cache. Returns how many sources went with it."""
    from ingestion.lifecycle import source_delete
    from retrieval import cache as semantic_cache
    from sources.models import Source

    workspace_id, agent_id = agent.workspace_id, agent.id
    with workspace_scope(workspace_id):
        sources = list(Source.objects.filter(agent_id=agent_id))
        for source in sources:
            source_delete(source=source)
        agent.delete()
    semantic_cache.invalidate(workspace_id=workspace_id, agent_id=agent_id)
    return len(sources)


def workspace_delete(*, workspace: Workspace) -> dict[str, int]:
    """Delete a workspace with everything in it: each agent through agent_delete (so each source goes through
    the lifecycle: vector points, keyword postings and stored files with it), then the workspace row, whose
    memberships, keys and remaining rows cascade (each agent's cache went with it). Returns what went."""
    with workspace_scope(workspace.id):
        agents = list(Agent.objects.all())
    deleted = {"agents": len(agents), "sources": 0}
    for agent in agents:
        deleted["sources"] += agent_delete(agent=agent)
    workspace_id = workspace.id
    Workspace.objects.filter(id=workspace_id).delete()
    return deleted


def admit_chat_message(*, agent: Agent) -> None:
    """Count one user message against the plan's chat messages this month, before the turn starts (and
    before anything is stored); raises QuotaExceeded when none are left."""
    quotas.take(agent.workspace, "chat_messages", 1)


def start_conversation(*, agent: Agent, visitor_id: str = "") -> Conversation:
    with workspace_scope(agent.workspace_id):
        return Conversation.objects.create(agent=agent, visitor_id=visitor_id)


def queue_auto_source(*, agent: Agent, page_url: str) -> bool:
    """Queue a page a visitor opened the widget on, if it belongs to an allowed origin, is new, and
    the agent is within its hourly budget of automatic sources."""
    from urllib.parse import urlsplit

    from django.conf import settings
    from django.core.cache import cache

    from ingestion.kinds.auto import AutoKind, visited_page_known, visited_page_url
    from ingestion.kinds.base import KindError
    from ingestion.lifecycle import source_create

    parts = urlsplit(page_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin not in {o.rstrip("/") for o in agent.allowed_origins}:
        return False
    url = visited_page_url(page_url)
    with workspace_scope(agent.workspace_id):
        if visited_page_known(agent_id=agent.id, url=url):
            return False
        budget_key = f"auto-sources:{agent.workspace_id}:{agent.id}:{int(timezone.now().timestamp() // 3600)}"
        cache.add(budget_key, 0, timeout=3700)
        if cache.incr(budget_key) > settings.AUTO_SOURCES_PER_HOUR:
            return False
        try:
            source_create(
                workspace=agent.workspace,
                agent_id=agent.id,
                kind=AutoKind.name,
                title="",
                payload={"url": url},
            )
        except (KindError, quotas.QuotaExceeded):
            return False  # e.g. a page on a private address, or the plan is full
    return True


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
) -> Iterator[dict]:
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
) -> Iterator[dict]:
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


SCOPE_RULES_HEADING = "Stay within this scope, set by the site's owner; decline anything outside it:"


def system_prompt(agent: Agent) -> str:
    """The agent's instructions (or the default), with its scope rules while the scope gate is on: the
    gate refuses unbacked questions in code, the rules keep a configured model on topic within answers."""
    base = agent.system_prompt.strip() or prompts.DEFAULT_SYSTEM_PROMPT
    rules = agent.scope_rules.strip()
    if rules and agent.gate_enabled:
        return f"{base}\n\n{SCOPE_RULES_HEADING}\n{rules}"
    return base


def agent_search_params(agent: Agent, audiences: list[str]) -> SearchParams:
    """How an agent searches, for its chat and for the admin's test panel alike."""
    deployment = SearchParams()  # the operator's fusion and weights, where the agent keeps the default
    return SearchParams(
        top_k=agent.top_k,
        min_score=agent.min_score,
        mode="hybrid" if agent.hybrid else "vector",
        fusion=agent.fusion or deployment.fusion,
        vector_weight=deployment.vector_weight if agent.vector_weight is None else agent.vector_weight,
        keyword_weight=deployment.keyword_weight if agent.keyword_weight is None else agent.keyword_weight,
        candidates=agent.candidates,
        rerank=agent.reranker or None,
        rerank_pool=agent.rerank_pool,
        semantic_cache=agent.semantic_cache,
        cache_threshold=agent.cache_threshold,
        cache_max_entries=agent.cache_max_entries,
        cache_ttl=agent.cache_ttl,
        # Every chunk carries its audiences ("public" unless the source says otherwise); a visitor sees
        # public passages plus those of the audiences their signed token grants.
        filters={"audience": ["public", *audiences]},
    )


GATE_CALL_ID = "gate"


def _call_id(turn: TurnContext, wanted: str) -> str:
    """The id a search is reported under: the model's own call id when it gave a fresh one, else the
    turn's next "search-N". Unique within the turn, so a client can pair each start with its results."""
    number = len(turn.call_ids) + 1
    while not wanted or wanted in turn.call_ids:
        wanted, number = f"search-{number}", number + 1
    turn.call_ids.add(wanted)
    return wanted


def _search(turn: TurnContext, query: str, record: bool = True, call_id: str = "") -> Iterator[dict]:
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


def _emit_text(text: str) -> Iterator[dict]:
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
