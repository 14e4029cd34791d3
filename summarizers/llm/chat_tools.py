"""Tool calls over the OpenAI-compatible chat API: the `expand(start, end)` tool the answer path offers.

`OpenAIChat` asks for text alone, which every server answers; a model can still ask to read more of the
meeting by writing `expand(12.0, 80.5)` on a line. Servers that support function calling (OpenAI, vLLM,
the llama.cpp server started with `--jinja`) can be offered the tool itself: `OpenAIToolChat` declares it
and returns the calls as `ToolReply.tool_calls`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ChatError
from .chat import ChatReply, OpenAIChat, snippet

if TYPE_CHECKING:
    import httpx

#: The expand tool, as an OpenAI function definition.
EXPAND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "expand",
        "description": "Read the meeting's transcript between two times (seconds from its start), verbatim "
                       "with each line's handle, when what you were given does not hold the answer.",
        "parameters": {
            "type": "object",
            "properties": {"start": {"type": "number", "description": "seconds"},
                           "end": {"type": "number", "description": "seconds"}},
            "required": ["start", "end"],
        },
    },
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for: its id (to answer it), the function's name and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolReply(ChatReply):
    """A reply that may ask for tool calls instead of (or besides) answering."""

    tool_calls: tuple[ToolCall, ...] = ()


class OpenAIToolChat(OpenAIChat):
    """`OpenAIChat` offering tools (by default `expand`); its replies are `ToolReply`s.

    Takes `OpenAIChat`'s arguments, plus `tools` (OpenAI function definitions).
    """

    def __init__(self, *args: Any, tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools = tools if tools is not None else [EXPAND_TOOL]

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {**super()._request(messages), "tools": self.tools}

    def _reply(self, response: httpx.Response) -> ChatReply:
        data, _, message = self._completion(response)
        if message is None:
            raise ChatError(f"the chat model at {self.url} answered with no message: {snippet(response.text)!r}",
                            url=self.url)
        calls = tuple(_calls(message.get("tool_calls")))
        text = message.get("content")
        if not isinstance(text, str):
            if not calls:
                raise ChatError(f"the chat model at {self.url} answered a choice without content or tool calls: "
                                f"{snippet(response.text)!r}", url=self.url)
            text = ""
        return ToolReply(text, *self._usage(data), calls)


def _calls(raw: object) -> list[ToolCall]:
    """The well-formed calls of a message's `tool_calls` (arguments are a JSON string in the API)."""
    calls = []
    for item in raw if isinstance(raw, list) else []:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                arguments = {}
        calls.append(ToolCall(str(item.get("id") or f"call_{len(calls)}"), function["name"],
                              arguments if isinstance(arguments, dict) else {}))
    return calls
