"""Keeping what is sent to the model inside its context window.

Besides the fixed per-result cut, the whole request must fit the configured model.
Older tool results go first (replaced by a one-line stub that says how to read them
again), then the oldest turns of the history; the system prompt, the newest user
message and the current turn are never dropped.
"""

from __future__ import annotations

from albert.ai.model import ChatMessage

CHARS_PER_TOKEN = 4
ANSWER_RESERVE_TOKENS = 4_000


def budget_chars(context_tokens: int, tools_chars: int) -> int:
    """Characters available for messages, after the answer's reserve and the tool schemas."""
    return max(4_000, (context_tokens - ANSWER_RESERVE_TOKENS) * CHARS_PER_TOKEN - tools_chars)


def _size(message: ChatMessage) -> int:
    return (
        len(message.content) + sum(len(c.arguments) + len(c.name) for c in message.tool_calls) + 16
    )


def _stub(message: ChatMessage) -> ChatMessage:
    note = (
        f"[Earlier result of {message.name or 'a tool'} ({len(message.content):,} characters) "
        f"left out to fit the context; read_tool_result with call_id "
        f'"{message.tool_call_id}" returns it.]'
    )
    return message.model_copy(update={"content": note})


def fit_context(messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
    """The messages, shrunk oldest-first until they fit `budget` characters."""
    total = sum(_size(m) for m in messages)
    if total <= budget:
        return messages
    out = list(messages)
    last_user = max((i for i, m in enumerate(out) if m.role == "user"), default=0)
    # 1. Stub tool results before the current turn, oldest first; then the current
    #    turn's own results, oldest first, keeping the newest step's whole.
    newest_step = _newest_step_start(out)
    for index in [*range(0, last_user), *range(last_user, newest_step)]:
        if total <= budget:
            return out
        message = out[index]
        if message.role == "tool" and not message.content.startswith("[Earlier result"):
            stub = _stub(message)
            total -= _size(message) - _size(stub)
            out[index] = stub
    # 2. Drop whole earlier turns (never the system prompt), oldest first.
    while total > budget:
        last_user = max((i for i, m in enumerate(out) if m.role == "user"), default=0)
        first = next((i for i, m in enumerate(out) if m.role != "system"), last_user)
        boundary = _next_user(out, first)
        if first >= last_user or boundary is None:
            break
        total -= sum(_size(m) for m in out[first:boundary])
        del out[first:boundary]
    return out


def _newest_step_start(messages: list[ChatMessage]) -> int:
    """Index of the last assistant message that made tool calls (its results stay whole)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant" and messages[index].tool_calls:
            return index
    return len(messages)


def _next_user(messages: list[ChatMessage], start: int) -> int | None:
    for index in range(start + 1, len(messages)):
        if messages[index].role == "user":
            return index
    return None
