"""The event catalog: every analytics event, defined once.

Server events are tracked by the chat object; client events are posted by the
browser to POST /api/events and validated here. `scripts/gen_event_catalog.py`
turns this module into web/js/events.generated.js, so the browser can only
send what this file declares.
"""

from __future__ import annotations

import types
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field

EventSide = Literal["server", "client"]
Theme = Literal["light", "dark"]
ToolSource = Literal["local", "remote", "unknown"]
# "declined" and "timeout": a destructive tool the user said no to, or did not answer in
# time. Not run, but no failure of the tool either; counted apart from "failed".
ToolOutcome = Literal["ok", "failed", "declined", "timeout"]


class CatalogEvent(BaseModel):
    """Base of every event: a fixed name, a side, and typed properties."""

    # Built on first use: most events are never sent by a given request.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: ClassVar[str]
    side: ClassVar[EventSide]
    description: ClassVar[str]


# --- server events -----------------------------------------------------------------------


class MessageSent(CatalogEvent):
    """A user's chat message was stored and a turn started for it."""

    name = "message_sent"
    side = "server"
    description = "A user message was stored and its turn started"

    thread_id: str
    chars: int = Field(ge=0)
    retry: bool = Field(False, description="A resend of a message whose turn failed")
    edited: bool = Field(
        False, description="Edit and resend: it replaced an earlier question and what followed"
    )


class AnswerRegenerated(CatalogEvent):
    """The user asked for another answer to the thread's last question."""

    name = "answer_regenerated"
    side = "server"
    description = "The last answer was regenerated (the old one kept as a version)"

    thread_id: str
    version: int = Field(ge=0, description="How many earlier answers the question has now")


FeedbackRating = Literal["up", "down"]


class AnswerFeedbackStored(CatalogEvent):
    """A thumbs up or down on an answer was stored with its message."""

    name = "answer_feedback_stored"
    side = "server"
    description = "Feedback on an answer was stored with the message"

    thread_id: str
    rating: FeedbackRating | None = Field(description="None: the feedback was taken back")
    comment_chars: int = Field(0, ge=0, description="Length of the comment (its text stays)")


class AiResponseGenerated(CatalogEvent):
    """A turn ended (answered, cut, cancelled or failed)."""

    name = "ai_response_generated"
    side = "server"
    description = "A turn of the model ended"

    model: str
    steps: int = Field(ge=0)
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    finish_reason: str
    latency_ms: float = Field(ge=0)


class ToolInvoked(CatalogEvent):
    """A tool call finished, successfully or not."""

    name = "tool_invoked"
    side = "server"
    description = "A tool call finished"

    tool: str
    source: ToolSource
    server: str | None = Field(None, description="The MCP server's name for remote tools")
    duration_ms: float = Field(ge=0)
    ok: bool
    truncated: bool
    outcome: ToolOutcome = Field(
        description="ok; failed (an error, or refused by a check); declined or timeout "
        "(a destructive tool not confirmed by the user)"
    )


class ThreadCreated(CatalogEvent):
    """A thread was created."""

    name = "thread_created"
    side = "server"
    description = "A thread was created"

    thread_id: str


class ThreadLoaded(CatalogEvent):
    """A thread's messages were loaded over HTTP."""

    name = "thread_loaded"
    side = "server"
    description = "A thread was loaded with its messages"

    thread_id: str
    messages: int = Field(ge=0)


# --- client events -----------------------------------------------------------------------


class SessionStarted(CatalogEvent):
    """The chat page was opened."""

    name = "session_started"
    side = "client"
    description = "The chat page was opened"

    theme: Theme
    viewport_width: int = Field(ge=0, le=100_000)


class SessionEnded(CatalogEvent):
    """The chat page was closed or hidden for good."""

    name = "session_ended"
    side = "client"
    description = "The chat page was closed"

    duration_ms: int = Field(ge=0)


class MessageSubmitted(CatalogEvent):
    """The user pressed send."""

    name = "message_submitted"
    side = "client"
    description = "The user submitted a message"

    chars: int = Field(ge=0)
    retry: bool = False


class FeedbackGiven(CatalogEvent):
    """The user rated an answer (thumbs up or down, maybe with a comment)."""

    name = "feedback_given"
    side = "client"
    description = "The user gave feedback on an answer"

    rating: FeedbackRating
    with_comment: bool = False


ChatAction = Literal[
    "copy_answer",
    "copy_code",
    "regenerate",
    "edit",
    "show_version",
    "search",
    "export_markdown",
    "export_json",
    "pin",
    "unpin",
    "suggestion",
]


class ChatActionUsed(CatalogEvent):
    """The user used one of the chat's actions on a message or a thread."""

    name = "chat_action_used"
    side = "client"
    description = "The user used a message or thread action"

    action: ChatAction


class ThreadSwitched(CatalogEvent):
    """The user opened another thread."""

    name = "thread_switched"
    side = "client"
    description = "The user switched to another thread"

    new_thread: bool = Field(False, description="The thread was created by this switch")


class ThemeToggled(CatalogEvent):
    """The user switched the colour theme."""

    name = "theme_toggled"
    side = "client"
    description = "The user toggled the theme"

    theme: Theme


class ConversationListToggled(CatalogEvent):
    """The user showed or hid the conversation list."""

    name = "conversation_list_toggled"
    side = "client"
    description = "The user showed or hid the conversation list"

    visible: bool


EVENTS: tuple[type[CatalogEvent], ...] = (
    MessageSent,
    AnswerRegenerated,
    AnswerFeedbackStored,
    AiResponseGenerated,
    ToolInvoked,
    ThreadCreated,
    ThreadLoaded,
    SessionStarted,
    SessionEnded,
    MessageSubmitted,
    ThreadSwitched,
    ThemeToggled,
    ConversationListToggled,
    FeedbackGiven,
    ChatActionUsed,
)
BY_NAME: dict[str, type[CatalogEvent]] = {event.name: event for event in EVENTS}
CLIENT_EVENTS: dict[str, type[CatalogEvent]] = {
    event.name: event for event in EVENTS if event.side == "client"
}


class FieldSpec(BaseModel):
    """One property of an event, in the terms the browser's validator uses."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    type: Literal["string", "integer", "number", "boolean"]
    required: bool
    nullable: bool = False
    values: list[str] | None = Field(None, description="Allowed values of an enum")
    minimum: float | None = None
    maximum: float | None = None


_SCALARS: dict[Any, Literal["string", "integer", "number", "boolean"]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
}


def field_specs(event: type[CatalogEvent]) -> list[FieldSpec]:
    """The properties of an event as plain types (for the generated browser catalog)."""
    specs: list[FieldSpec] = []
    for field_name, info in event.model_fields.items():
        annotation = info.annotation
        nullable = False
        if get_origin(annotation) in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            nullable = len(members) < len(get_args(annotation))
            if len(members) != 1:
                raise TypeError(f"{event.name}.{field_name}: unions are not supported")
            annotation = members[0]
        values: list[str] | None = None
        if get_origin(annotation) is Literal:
            values = [str(v) for v in get_args(annotation)]
            kind: Literal["string", "integer", "number", "boolean"] = "string"
        elif annotation in _SCALARS:
            kind = _SCALARS[annotation]
        else:
            raise TypeError(f"{event.name}.{field_name}: unsupported type {annotation!r}")
        minimum = maximum = None
        for meta in info.metadata:
            minimum = getattr(meta, "ge", minimum)
            maximum = getattr(meta, "le", maximum)
        specs.append(
            FieldSpec(
                name=field_name,
                type=kind,
                required=info.is_required(),
                nullable=nullable,
                values=values,
                minimum=minimum,
                maximum=maximum,
            )
        )
    return specs
