"""The scope gate: a turn is answered only when the knowledge backs it.

A turn is backed when a search in it found a passage at or above the agent's min_score, or the user's
message itself matches one. An unbacked turn gets the agent's off-topic reply and the model is not
asked to answer it.
"""

from __future__ import annotations

from agents.llm.base import ChatModel, LLMError, TextDelta
from agents.models import Agent
from retrieval.services import Passage

REFUSAL_PROMPT = (
    "Politely tell the user, in the language of their message, that you can only help with questions "
    "about this website's topics, and that you cannot answer this one. One or two sentences. "
    "Use this reply as the meaning to convey: {reply}"
)


def is_backed(agent: Agent, searches: list[list[Passage]]) -> bool:
    min_score = agent.min_score
    if not agent.gate_enabled or min_score is None:  # gate_enabled: min_score is set
        return True
    return any(p.score >= min_score for passages in searches for p in passages)


def refusal(agent: Agent, user_text: str, model: ChatModel | None) -> str:
    """The off-topic reply; optionally written by the model in the user's language, from the last
    message alone (no tools, passages or history). The fixed reply is the fallback."""
    if agent.offtopic_in_user_language and model is not None:
        messages = [
            {"role": "system", "content": REFUSAL_PROMPT.format(reply=agent.offtopic_reply)},
            {"role": "user", "content": user_text},
        ]
        try:
            text = "".join(e.text for e in model.stream(messages) if isinstance(e, TextDelta)).strip()
            if text:
                return text
        except LLMError:
            pass  # the fixed reply below is the documented fallback
    return agent.offtopic_reply
