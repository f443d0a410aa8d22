"""A whole thread as a file the user keeps: Markdown to read, JSON to process."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from albert.protocol.http import Message, Thread, ThreadDetail
from albert.storage.threads import ThreadStore

# A thread is read in pages of this many messages; an export holds at most MAX_MESSAGES.
PAGE = 200
MAX_MESSAGES = 20_000


def all_messages(store: ThreadStore, thread_id: str) -> Iterator[Message]:
    """Every stored message of the thread, oldest first (NotFound for no such thread)."""
    cursor: str | None = None
    for _ in range(MAX_MESSAGES // PAGE):
        messages, cursor = store.list_messages(thread_id, PAGE, cursor)
        yield from messages
        if cursor is None:
            return


def as_json(thread: Thread, messages: list[Message]) -> str:
    """The ThreadDetail shape the API answers, with every message."""
    return ThreadDetail(thread=thread, messages=messages).model_dump_json(indent=2)


def as_markdown(thread: Thread, messages: list[Message]) -> str:
    """The conversation as the chat shows it: questions, answers, each tool call and result."""
    lines = [f"# {_one_line(thread.title)}", ""]
    for message in messages:
        if message.role == "user":
            lines += ["## You", "", message.content, ""]
        elif message.role == "assistant":
            if message.content.strip():
                lines += ["## Albert", "", message.content, ""]
            for call in message.tool_calls:
                lines += [f"*Tool call `{call.name}`:*", "", _fenced(call.arguments, "json"), ""]
        elif message.role == "tool":
            source = message.meta.get("source")
            where = f" on {source}" if isinstance(source, str) and source != "local" else ""
            state = " (failed)" if message.status == "error" else ""
            lines += [f"*Result of `{message.name}`{where}{state}:*", "", _fenced(message.content)]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def filename(thread: Thread, extension: str) -> str:
    """A safe file name from the title (ASCII letters, digits and dashes)."""
    stem = re.sub(r"[^A-Za-z0-9]+", "-", thread.title).strip("-").lower()[:60] or "conversation"
    return f"{stem}.{extension}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fenced(text: str, language: str = "") -> str:
    """Text in a code fence longer than any run of backticks inside it."""
    if language == "json":
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"
