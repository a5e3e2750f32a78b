"""An OpenAI-compatible `/chat/completions` model, streamed (OpenAI, vLLM, Ollama, LiteLLM, ...)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agents.llm.base import ChatModel, LLMError, ModelEvent, TextDelta, ToolCall
from config.outbound import (
    OutboundBlocked,
    OutboundClient,
    OutboundError,
    OutboundPolicy,
    OutboundTimeout,
    OutboundTooLarge,
)


class OpenAIChatModel(ChatModel):
    """`base_url` is set by a workspace admin, so every call goes through the outbound client: checked and
    pinned addresses, time limits, and a size limit on the streamed answer."""

    def __init__(
        self, *, base_url: str, model: str, api_key: str = "", policy: OutboundPolicy | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._policy = policy

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> Iterator[ModelEvent]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        if tools:
            body["tools"] = tools
        calls: dict[int, dict[str, str]] = {}
        url = f"{self.base_url}/chat/completions"
        try:
            with (
                OutboundClient(self._policy) as client,
                client.stream("POST", url, json=body, headers=self._headers) as response,
            ):
                if response.status_code in (401, 403):
                    raise LLMError("The model provider rejected the API key.", response.body_start())
                if response.status_code == 429:
                    raise LLMError(
                        "The model provider is rate-limiting us; try again shortly.", response.body_start()
                    )
                if response.status_code >= 400:
                    raise LLMError(
                        f"The model provider answered with an error (HTTP {response.status_code}).",
                        response.body_start(),
                    )
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    chunk = json.loads(data)
                    if chunk.get("error"):
                        raise LLMError("The model failed while answering.", json.dumps(chunk["error"]))
                    for choice in chunk.get("choices", []):
                        delta = choice.get("delta") or {}
                        if delta.get("content"):
                            yield TextDelta(delta["content"])
                        for call in delta.get("tool_calls") or []:
                            slot = calls.setdefault(
                                call.get("index", 0), {"id": "", "name": "", "arguments": ""}
                            )
                            slot["id"] = call.get("id") or slot["id"]
                            function = call.get("function") or {}
                            slot["name"] += function.get("name") or ""
                            slot["arguments"] += function.get("arguments") or ""
        except OutboundBlocked as exc:
            raise LLMError(f"The model base URL was refused. {exc.message}", exc.detail) from exc
        except OutboundTimeout as exc:
            raise LLMError("The model took too long to answer.", exc.detail) from exc
        except OutboundTooLarge as exc:
            raise LLMError("The model's answer was larger than we accept.", exc.detail) from exc
        except OutboundError as exc:
            raise LLMError("We couldn't reach the model provider.", f"{exc.message} {exc.detail}") from exc
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LLMError("The model provider sent an unreadable answer.", repr(exc)) from exc
        for index in sorted(calls):
            slot = calls[index]
            try:
                arguments = json.loads(slot["arguments"] or "{}")
            except ValueError:
                arguments = {"_unparsed": slot["arguments"]}
            yield ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments=arguments)
