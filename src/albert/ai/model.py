"""The model port: a streaming chat-completions call with tools."""

from collections.abc import AsyncIterator
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from albert.tools.base import ToolSpec


class ChatToolCall(BaseModel):
    """A tool call in OpenAI's message shape."""

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    arguments: str = Field(description="JSON text as produced by the model")


class ChatMessage(BaseModel):
    """A message of the conversation sent to the model."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ChatToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # A tool result's structured content, as the chat shows it (ToolResult.presentable), on
    # results of the running turn only: never sent to a model gateway (albert.ai.openai_wire
    # writes the fields it sends); the demo planner reads it to word its lead sentence.
    structured: dict[str, Any] | None = None


class ModelRequest(BaseModel):
    """One model step: the conversation so far and the tools it may call."""

    model_config = ConfigDict(defer_build=True)

    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)


class TextDelta(NamedTuple):
    """A piece of answer text (a named tuple: one is made per streamed token, and the class
    costs less to make at import than a dataclass)."""

    text: str
    kind: Literal["text"] = "text"


class ToolCallRequest(BaseModel):
    """A complete tool call, emitted once its streamed arguments are assembled."""

    model_config = ConfigDict(defer_build=True)

    kind: Literal["tool_call"] = "tool_call"
    call: ChatToolCall


class StepFinished(BaseModel):
    """The model finished this step."""

    model_config = ConfigDict(defer_build=True)

    kind: Literal["finish"] = "finish"
    reason: str = Field(description="OpenAI finish_reason: stop, tool_calls, length, …")
    prompt_tokens: int = 0
    completion_tokens: int = 0


ModelEvent = TextDelta | ToolCallRequest | StepFinished

ModelErrorKind = Literal["http", "rate_limited", "timeout", "stream_cut", "bad_response", "network"]


class ModelError(Exception):
    """The model gateway failed; `kind` says how, `retryable` whether trying again may help."""

    def __init__(
        self,
        kind: ModelErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        # What the gateway itself said (its error body, redacted): for the log and the
        # folded detail, never the message.
        self.gateway_said = ""

    @property
    def retryable(self) -> bool:
        """Rate limits, timeouts, cut streams and 5xx may succeed on a retry."""
        if self.kind in ("rate_limited", "timeout", "stream_cut", "network"):
            return True
        return self.status is not None and self.status >= 500


class ModelClient(Protocol):
    """Anything that streams a model step: OpenAI-compatible, Workers AI, the demo planner."""

    @property
    def model_name(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one step; raises ModelError on failure."""
        ...
