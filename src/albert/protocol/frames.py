"""WebSocket frames between the browser and the client's Durable Object.

Every chat frame names its thread, so one socket serves every thread of a client.
"""

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

# Ids are made by clients (message ids) or by the object (thread ids); both are
# short opaque tokens, never free text that could smuggle anything into SQL or logs.
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
Id = Annotated[str, Field(pattern=ID_PATTERN)]


class _Frame(BaseModel):
    # Built on first use: a cold start pays only for the frames it handles.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class _TurnFrame(_Frame):
    """A frame of one running turn; `seq` orders them (1, 2, 3, …) for resuming."""

    seq: int = Field(0, ge=0)


# --- client → server -------------------------------------------------------------------


class ChatFrame(_Frame):
    """A user message for one thread; a resent message_id is answered once."""

    type: Literal["chat"] = "chat"
    thread_id: Id
    message_id: Id = Field(description="Made by the client; makes resending idempotent")
    text: str = Field(min_length=1)
    replaces: Id | None = Field(
        None,
        description="Edit and resend: the message_id of an earlier question of this thread; "
        "it and everything after it are deleted, and the thread goes on from this message",
    )


class RegenerateFrame(_Frame):
    """Answer the thread's last question again; the answer it had is kept as a previous
    version (its messages get `meta.version`: 1 for the first answer, 2 for the next …)."""

    type: Literal["regenerate"] = "regenerate"
    thread_id: Id
    turn_id: Id = Field(description="The last question's message_id")


class CancelFrame(_Frame):
    """Stop the running turn of a thread; the partial answer is kept."""

    type: Literal["cancel"] = "cancel"
    thread_id: Id


class PingFrame(_Frame):
    """Keep-alive; answered with a pong."""

    type: Literal["ping"] = "ping"


class ResumeFrame(_Frame):
    """After a reconnect: send me the running turn's frames after `after_seq`, then live."""

    type: Literal["resume"] = "resume"
    thread_id: Id
    turn_id: Id | None = Field(None, description="The turn the client was following, if any")
    after_seq: int = Field(0, ge=0, description="Highest turn frame seq already applied")


class ConfirmFrame(_Frame):
    """The user's answer to a `confirm_tool` frame: run that tool call, or do not."""

    type: Literal["confirm"] = "confirm"
    thread_id: Id
    turn_id: Id
    # Made by the model, so not held to the Id pattern; only ever compared, never stored.
    call_id: str = Field(min_length=1, max_length=1_024)
    approved: bool


ClientFrames = ChatFrame | CancelFrame | PingFrame | ResumeFrame | ConfirmFrame | RegenerateFrame
ClientFrame = Annotated[ClientFrames, Field(discriminator="type")]
client_frame_adapter: TypeAdapter[ClientFrames] = TypeAdapter(
    ClientFrame, config=ConfigDict(defer_build=True)
)


# --- server → client -------------------------------------------------------------------


class Usage(BaseModel):
    """Token counts of a turn, summed over its model steps."""

    model_config = ConfigDict(defer_build=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0


class StartFrame(_TurnFrame):
    """A turn began: the user's message is stored."""

    type: Literal["start"] = "start"
    thread_id: str
    turn_id: str = Field(description="The user message_id this turn answers")
    model: str


class TextDeltaFrame(_TurnFrame):
    """A piece of the answer's text, in order."""

    type: Literal["text_delta"] = "text_delta"
    thread_id: str
    turn_id: str
    step: int
    delta: str


class ToolCallFrame(_TurnFrame):
    """The model asked for a tool; it is running now (one that asks first: see confirm_tool)."""

    type: Literal["tool_call"] = "tool_call"
    thread_id: str
    turn_id: str
    step: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    server: str | None = Field(None, description="The MCP server of the tool; None: built in")


# The most of a tool result's structured content the chat shows and keeps (its compact
# JSON): it rides in one WebSocket frame and one stored message, so it is bounded like them.
# A larger one is left out of both, and the chat shows the result's text instead.
MAX_STRUCTURED_CHARS = 100_000


class ToolResultFrame(_TurnFrame):
    """A tool finished (or failed); preview of what the model saw."""

    type: Literal["tool_result"] = "tool_result"
    thread_id: str
    turn_id: str
    step: int
    call_id: str
    name: str
    server: str | None = Field(None, description="The MCP server of the tool; None: built in")
    ok: bool
    duration_ms: float
    truncated: bool
    content: str
    structured: dict[str, Any] | None = Field(
        None,
        description="The tool's structured content, which the chat draws its card from: "
        "present on a successful result whose content's compact JSON is at most "
        f"{MAX_STRUCTURED_CHARS:,} characters (also stored as the tool message's "
        "`meta.structured`, so a reloaded thread shows the same)",
    )

    @field_validator("structured")
    @classmethod
    def _bounded(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # The frame keeps its own bound, whoever builds it: content over it is left out
        # (the chat then shows the result's text), never sent whole.
        return value if value is None or within_bound(value) else None


def within_bound(structured: dict[str, Any]) -> bool:
    """True when structured content's compact JSON is at most MAX_STRUCTURED_CHARS."""
    try:
        text = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return False
    return len(text) <= MAX_STRUCTURED_CHARS


class ToolProgressFrame(_TurnFrame):
    """A running tool reported progress (at most a few per second per call)."""

    type: Literal["tool_progress"] = "tool_progress"
    thread_id: str
    turn_id: str
    step: int
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = Field(None, max_length=200)


class ConfirmToolFrame(_TurnFrame):
    """A remote tool its server marks destructive waits for the user's `confirm`.

    Until the answer comes (or `timeout_seconds` pass: then it does not run) the turn waits;
    the answer is told in a `tool_decision` frame of the same call.
    """

    type: Literal["confirm_tool"] = "confirm_tool"
    thread_id: str
    turn_id: str
    step: int
    call_id: str
    server: str = Field(description="The MCP server the tool belongs to")
    tool: str
    arguments: str = Field(
        description="The call's arguments as JSON text, invisible and control characters "
        "written as escapes, cut to a bounded length (see arguments_cut)"
    )
    arguments_cut: bool = False
    timeout_seconds: float


ToolDecision = Literal["approved", "declined", "timeout"]


class ToolDecisionFrame(_TurnFrame):
    """How a `confirm_tool` was settled: the tool runs only when `approved`."""

    type: Literal["tool_decision"] = "tool_decision"
    thread_id: str
    turn_id: str
    step: int
    call_id: str
    decision: ToolDecision


# Every turn ends in exactly one of these, stored with its last message.
FinishReason = Literal["stop", "step_limit", "length", "refusal", "error", "timeout", "cancelled"]


class DoneFrame(_TurnFrame):
    """A turn ended."""

    type: Literal["done"] = "done"
    thread_id: str
    turn_id: str
    finish_reason: FinishReason
    steps: int
    usage: Usage


ErrorCode = Literal[
    "bad_frame",
    "too_large",
    "unknown_thread",
    "nothing_running",
    "nothing_to_confirm",
    "unknown_turn",
    "busy",
    "duplicate_id",
    "model_error",
    "rate_limited",
    "timeout",
    "internal",
    # Storage failed (e.g. full): what the frame names was not kept.
    "storage_unavailable",
]


class ErrorFrame(_TurnFrame):
    """Something went wrong; says what, and whether retrying can help."""

    type: Literal["error"] = "error"
    code: ErrorCode
    message: str = Field(description="What happened and what to do next, in plain words.")
    detail: str | None = Field(
        None, description="The technical detail (shown folded under the message); no secrets."
    )
    thread_id: str | None = None
    turn_id: str | None = None
    retryable: bool = False
    retry_after_seconds: float | None = None


class AckFrame(_Frame):
    """A chat frame was received; duplicate=True means it was already answered."""

    type: Literal["ack"] = "ack"
    thread_id: str
    message_id: str
    duplicate: bool = False


class PongFrame(_Frame):
    """Answer to a ping."""

    type: Literal["pong"] = "pong"


class ResyncFrame(_Frame):
    """Answer to a resume: what was replayed, and whether the turn is still running."""

    type: Literal["resync"] = "resync"
    thread_id: str
    turn_id: str | None
    running: bool
    replayed: int


class TurnInterruptedFrame(_Frame):
    """Answer to a resume of a turn that a restart of the server cut off: it will not go on.

    What the user saw of it is stored (status `incomplete`, finish reason `error`, meta
    `ended_by: "restart"`); reload the thread to show it. Resending the turn's message_id
    retries the turn.
    """

    type: Literal["turn_interrupted"] = "turn_interrupted"
    thread_id: str
    turn_id: str
    reason: Literal["restart"] = "restart"
    message: str
    retryable: bool = True


# needs_authorization: the server asks for OAuth and waits for the user (no retries).
McpState = Literal[
    "connecting", "ready", "reconnecting", "failed", "needs_authorization", "disabled"
]


class McpServerStatus(BaseModel):
    """How one configured MCP server of this client is doing."""

    model_config = ConfigDict(defer_build=True)

    name: str
    state: McpState
    kind: Literal["vaults", "filesystem", "generic"] | None = None
    tools: int = 0
    attempts: int = Field(0, description="Retries used in the current recovery cycle")
    next_retry_in_seconds: float | None = None
    last_error: str | None = None
    quarantined: list[str] = Field(
        default_factory=list, description="Tools left out, each as 'name: reason'"
    )
    renamed: list[str] = Field(
        default_factory=list,
        description="Tools offered under another name, each as 'name → offered name' (the "
        "name clashes with a platform tool, or has characters model APIs refuse)",
    )
    tool_names: list[str] = Field(
        default_factory=list,
        description="A ready server's tools under the names they are offered as (renamed "
        "ones by their new name, left-out ones not at all); at most 200, each cut to 80 "
        "characters",
    )


class McpStatusFrame(_Frame):
    """The MCP servers' connection states; sent whenever one changes."""

    type: Literal["mcp_status"] = "mcp_status"
    servers: list[McpServerStatus]


ServerFrame = Annotated[
    StartFrame
    | TextDeltaFrame
    | ToolCallFrame
    | ToolResultFrame
    | ToolProgressFrame
    | ConfirmToolFrame
    | ToolDecisionFrame
    | DoneFrame
    | ErrorFrame
    | AckFrame
    | PongFrame
    | ResyncFrame
    | TurnInterruptedFrame
    | McpStatusFrame,
    Field(discriminator="type"),
]
server_frame_adapter: TypeAdapter[Any] = TypeAdapter(
    ServerFrame, config=ConfigDict(defer_build=True)
)
