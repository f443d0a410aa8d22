"""HTTP bodies of the router and the object's thread API."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from albert.auth.tenants import PublicTenant


class _Body(BaseModel):
    # Built on first use: a cold start pays only for the bodies it handles.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SessionRequest(_Body):
    """Body of POST /api/session (optional)."""

    tenant: str | None = Field(
        None, max_length=32, description="Tenant key; default tenant if absent"
    )
    claim_token: str | None = Field(
        None,
        max_length=1_024,
        description="With a host JWT as the bearer: this browser's anonymous session token, "
        "whose threads and MCP servers then move into the signed-in user's account",
    )


class ClaimOutcome(_Body):
    """What became of the anonymous work named by `claim_token` at sign-in."""

    status: Literal["claimed", "already_claimed", "refused", "pending"] = Field(
        description="claimed: moved now; already_claimed: moved before, to this user; "
        "refused: not moved (see detail); pending: not finished, sign in again to finish"
    )
    threads: int = 0
    mcp_servers: int = 0
    detail: str | None = None


class SessionResponse(_Body):
    """A client identity and the signed token that proves it."""

    client_id: str
    token: str = Field(description="Send as `Authorization: Bearer …`, or `?token=` on the socket")
    expires_at: int = Field(description="Unix seconds")
    tenant: PublicTenant
    user_id: str | None = Field(None, description="The signed-in user; absent when anonymous")
    claim: ClaimOutcome | None = Field(None, description="Set when a claim_token was sent")


class RevokeRequest(_Body):
    """Body of POST /api/session/revoke (optional)."""

    tenant: str | None = Field(
        None,
        max_length=32,
        description="With a host JWT as the bearer: the tenant the host means; another "
        "tenant than the token's is refused (403 tenant_mismatch), as at sign-in",
    )


class RevokeResponse(_Body):
    """What POST /api/session/revoke did: every session of the user issued up to now ended."""

    user_id: str
    revoked_up_to: int = Field(
        description="Unix milliseconds: sessions signed in at or before it are refused "
        "(401 session_revoked); later sign-ins work"
    )
    sockets_closed: int = Field(description="Open chat sockets closed with 4003")
    turns_cancelled: int = Field(description="Running answers stopped, stored as `cancelled`")


class ThreadCreate(_Body):
    """Body of POST /api/threads."""

    title: str | None = Field(None, description="Defaults to 'New chat'")


class ThreadUpdate(_Body):
    """Body of PATCH /api/threads/{id}: a new title, pinned or not, or both."""

    title: str | None = Field(None, min_length=1)
    pinned: bool | None = Field(None, description="Pinned threads are listed first")


class Thread(_Body):
    """One conversation."""

    id: str
    title: str
    created_at: int = Field(description="Unix milliseconds")
    updated_at: int = Field(description="Unix milliseconds")
    pinned: bool = False


class ThreadSearchHit(_Body):
    """A thread whose title or messages match a search, with the best matching words."""

    thread: Thread
    snippet: str | None = Field(
        None, description="Words of a matching message, the matches between [ and ]"
    )


class ThreadSearchResults(_Body):
    """Answer of GET /api/threads?q=…: matching threads, pinned first, then newest first."""

    query: str
    results: list[ThreadSearchHit]


FeedbackRating = Literal["up", "down"]


class FeedbackBody(_Body):
    """Body of PUT /api/threads/{id}/turns/{turn_id}/feedback."""

    rating: FeedbackRating | None = Field(description="None takes the feedback back")
    comment: str | None = Field(None, max_length=2_000)


class Feedback(_Body):
    """Feedback on an answer, stored in its last message's `meta.feedback`."""

    rating: FeedbackRating
    comment: str | None = None
    at: int = Field(description="Unix milliseconds")


class FeedbackStored(_Body):
    """Answer of the feedback PUT: the message it was stored with."""

    message_id: str
    feedback: Feedback | None


class ThreadPage(_Body):
    """A page of threads, newest first."""

    threads: list[Thread]
    next_cursor: str | None = None


MessageRole = Literal["user", "assistant", "tool"]
MessageStatus = Literal["complete", "incomplete", "cancelled", "error"]


class ToolCallRecord(_Body):
    """A tool call the assistant made, as stored."""

    id: str
    name: str
    arguments: str = Field(description="JSON text exactly as the model produced it")


class Message(_Body):
    """One stored message of a thread."""

    id: str
    thread_id: str
    turn_id: str
    role: MessageRole
    content: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    status: MessageStatus = "complete"
    finish_reason: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    created_at: int


class ThreadDetail(_Body):
    """A thread with a page of its messages, oldest first."""

    thread: Thread
    messages: list[Message]
    next_cursor: str | None = None


class ThreadExport(_Body):
    """GET /api/threads/{id}/export?format=json: the whole thread, every message (with
    earlier versions of regenerated answers and tool results) oldest first."""

    format: Literal["albert.thread.v1"] = "albert.thread.v1"
    exported_at: int = Field(description="Unix milliseconds")
    thread: Thread
    messages: list[Message]


class FieldError(_Body):
    """What is wrong with one field of a request body."""

    field: str | None = Field(
        None, description="The body's top-level field at fault; null: the body as a whole"
    )
    message: str


class ErrorBody(_Body):
    """Every HTTP error answers with this body."""

    error: str
    detail: str | None = None
    fields: list[FieldError] | None = Field(
        None,
        description="A body's refusal: what is wrong, field by field (present only then)",
    )
