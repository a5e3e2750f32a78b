"""The chat model interface: a stream of text deltas and tool calls."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


class LLMError(RuntimeError):
    """The model could not answer. `message` is for people, `detail` for operators."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


ModelEvent = TextDelta | ToolCall


class ChatModel(ABC):
    @abstractmethod
    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> Iterator[ModelEvent]:
        """Yield text deltas as they arrive, then any tool calls the model made in this step."""
