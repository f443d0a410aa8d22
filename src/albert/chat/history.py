"""The thread's stored messages as the model reads them.

Tool results are stored as the model was shown them (our preface and the tool's text,
cut to fit) with our notes in their meta; here they become `ToolResult`s again and are
fenced as untrusted text as the model's messages are built (albert.tools.fence). A result
stored before the notes were kept apart (its cut note and a page's preface inside its
text) is fenced whole: nothing of it is taken for ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from albert.ai.model import ChatMessage, ChatToolCall
from albert.tools.base import Cut, TextPart, ToolResult
from albert.tools.fence import for_model

# How many of the newest messages a turn sends; the context budget trims further.
HISTORY_MESSAGES = 200

INTERRUPTED_RESULT = "No result: the turn was interrupted before this tool finished."


class _StoredCall(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...


class StoredMessage(Protocol):
    """What is read of a stored message: `Message` and `HistoryEntry` both have it."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def tool_calls(self) -> Sequence[_StoredCall]: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def meta(self) -> Mapping[str, Any]:
        """Of a tool result: its source and our notes (as the recorder stored them)."""
        ...


def history_for_model(messages: Sequence[StoredMessage]) -> list[ChatMessage]:
    """Stored messages in the model's shape.

    Incomplete answers are left out (the model should not continue a cut text),
    and a tool call whose result was never stored gets a stand-in result, since
    model APIs reject a call without one.
    """
    out: list[ChatMessage] = []
    answered_calls = {m.tool_call_id for m in messages if m.role == "tool"}
    for m in messages:
        if m.role == "assistant":
            out.extend(_assistant(m, answered_calls))
        elif m.role == "tool":
            out.append(
                ChatMessage(
                    role="tool",
                    content=_result(m),
                    tool_call_id=m.tool_call_id,
                    name=m.name,
                )
            )
        else:
            out.append(ChatMessage(role="user", content=m.content))
    return out


def _result(m: StoredMessage) -> str:
    meta = m.meta
    source = meta.get("source")
    return for_model(
        m.name or "an earlier tool",
        source if isinstance(source, str) else None,
        stored_result(m.content, meta),
    )


def stored_result(content: str, meta: Mapping[str, Any]) -> ToolResult:
    """A stored tool message as the result it was: the tool's text and our notes."""
    preface_chars = meta.get("preface_chars")
    preface = ""
    if isinstance(preface_chars, int) and 0 < preface_chars <= len(content):
        preface, content = content[:preface_chars], content[preface_chars:]
    total = meta.get("total_chars")
    cut = None
    if meta.get("truncated") and isinstance(total, int) and total >= len(content):
        cut = Cut(shown=len(content), total=total)
    label = meta.get("fence_label")
    return ToolResult(
        content=[TextPart(text=content)],
        own_words=bool(meta.get("own_words")),
        preface=preface,
        fence_label=label if isinstance(label, str) else None,
        cut=cut,
    )


def _assistant(m: StoredMessage, answered_calls: set[str | None]) -> list[ChatMessage]:
    if m.status != "complete" and not m.tool_calls:
        return []
    calls = [ChatToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in m.tool_calls]
    return [
        ChatMessage(role="assistant", content=m.content, tool_calls=calls),
        *(
            ChatMessage(role="tool", content=INTERRUPTED_RESULT, tool_call_id=c.id, name=c.name)
            for c in calls
            if c.id not in answered_calls
        ),
    ]
