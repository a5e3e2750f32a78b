"""A follow-up question made searchable on its own: "and on Sundays?" or "what is its default?" means
nothing to a search without the previous question's topic.

Without a model the rewrite is deterministic: a short question that leans on the conversation (it opens
with "and"/"what about", points back with "it"/"its"/"that", or has almost no content words) gets the
topic terms of the previous search query added. That query is the one recorded for the previous turn,
itself condensed, so a chain of follow-ups keeps its topic. With a model, the model rewrites it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from agents.llm.base import ChatModel, LLMError, TextDelta
from agents.models import Conversation, Message
from retrieval.keyword import STOP_WORDS

log = logging.getLogger(__name__)

REWRITE_PROMPT = (
    "Rewrite the user's last message as one standalone search query for a knowledge base, using the "
    "conversation only to resolve what it refers to (pronouns, omitted subjects). Keep its language. "
    "Reply with the query alone, no quotes, no explanation. If it already stands alone, repeat it."
)
MAX_QUERY_CHARS = 500
HISTORY_FOR_REWRITE = 6

_FOLLOW_UP_START = re.compile(
    r"^\s*(?:and|or|but|also|then|so|what about|how about|what if|same for|and what about|and how about)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w][\w.\-/]*[\w]|\w", re.UNICODE)
_ANAPHORS = frozenset(
    "it its it's itself they them their theirs that this those these there one ones he she him her "
    "his hers same such".split()
)
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could should would "
    "will may might must please tell me about explain know want need".split()
)
MAX_FOLLOW_UP_WORDS = 4  # content words; a longer question usually names its own topic


def _words(text: str) -> list[str]:
    return [w.strip(".-/") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that carry a topic: not stop words, question words or pronouns, in order, once each."""
    seen: set[str] = set()
    words = []
    for word in _words(text):
        lowered = word.lower()
        if lowered in STOP_WORDS or lowered in _QUESTION_WORDS or lowered in _ANAPHORS or lowered in seen:
            continue
        seen.add(lowered)
        words.append(word)
    return words


def is_follow_up(question: str) -> bool:
    words = [w.lower() for w in _words(question)]
    topic = content_words(question)
    if _FOLLOW_UP_START.match(question):
        return True
    if any(w in _ANAPHORS for w in words) and len(topic) <= MAX_FOLLOW_UP_WORDS:
        return True
    return len(topic) <= 1


def condense(question: str, previous_query: str | None) -> str:
    """The retrieval query for `question`: itself, plus the previous query's topic for a follow-up."""
    question = question.strip()
    if not previous_query or not is_follow_up(question):
        return question
    present = {w.lower() for w in _words(question)}
    added = [w for w in content_words(previous_query) if w.lower() not in present]
    if not added:
        return question
    return f"{question} ({' '.join(added)})"[:MAX_QUERY_CHARS]


def rewrite_with_model(model: ChatModel, question: str, history: list[dict]) -> str:
    """The model's standalone version of `question`; raises LLMError when the model fails or says nothing."""
    transcript = "\n".join(
        f"{m['role']}: {' '.join(str(m['content']).split())[:600]}" for m in history[-HISTORY_FOR_REWRITE:]
    )
    messages = [
        {"role": "system", "content": REWRITE_PROMPT},
        {"role": "user", "content": f"Conversation:\n{transcript}\n\nLast message: {question}"},
    ]
    text = "".join(e.text for e in model.stream(messages) if isinstance(e, TextDelta))
    query = " ".join(text.split()).strip("\"'“”")
    if not query:
        raise LLMError("The model gave no rewritten question.", "empty rewrite")
    return query[:MAX_QUERY_CHARS]


def standalone_question(
    question: str, model: ChatModel | None, history: list[dict], previous_query: str | None
) -> tuple[str, dict[str, Any]]:
    """The question as a search can understand it, and what to record about how it was made: a
    follow-up gets its topic from the conversation, from the model when there is one, else by the rules."""
    if not history:
        return question, {}
    recorded: dict[str, Any] = {}
    if model is not None:
        try:
            return rewrite_with_model(model, question, history), {"condensed_by": "model"}
        except LLMError as exc:
            # The rules below still give a usable query; the failure is recorded, not hidden.
            log.warning("question rewrite failed: %s", exc.detail)
            recorded["condense_error"] = exc.message
    query = condense(question, previous_query)
    if query != question:
        recorded["condensed_by"] = "rules"
    return query, recorded


def last_search_query(conversation: Conversation) -> str | None:
    """The search query of the conversation's last turn (itself condensed), which a follow-up builds on."""
    arguments = (
        conversation.messages.filter(role=Message.Role.TOOL, tool_name="search_knowledge")
        .order_by("-created_at", "-id")
        .values_list("tool_arguments", flat=True)
        .first()
    )
    if not isinstance(arguments, dict):
        return None
    return str(arguments.get("query") or "") or None
