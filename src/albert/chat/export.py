"""A thread exported for the user: as Markdown to read, as JSON to keep or process.

Markdown shows the conversation as it stands: each question and its current answer, tool
calls as one line each (tool, server, outcome, time), earlier versions of a regenerated
answer under a heading. Everything a person or a model wrote passes through
`albert.chat.safe_markdown` (no raw HTML, image or link but http(s) and mailto survives,
code is kept), and tool names and arguments sit in code spans no backtick can end; the
document's own structure is Markdown only, no HTML. JSON (`ThreadExport`) is every stored
message as the API sends it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from albert.chat.safe_markdown import code_span, inline_text, neutralised
from albert.protocol.http import Message, Thread, ThreadExport


def export_json(thread: Thread, messages: Sequence[Message], now_ms: int) -> ThreadExport:
    """The thread and every message, oldest first."""
    return ThreadExport(exported_at=now_ms, thread=thread, messages=list(messages))


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _tool_line(m: Message) -> str:
    meta: dict[str, Any] = m.meta
    source = meta.get("source")
    remote = isinstance(source, str) and source not in ("local", "unknown")
    where = f" on {inline_text(source)}" if remote else ""
    decision = meta.get("confirmation")
    if decision in ("declined", "timeout"):
        outcome = "declined"
    else:
        outcome = "failed" if m.status == "error" else "ok"
    took = meta.get("duration_ms")
    took_text = f", {took / 1000:.1f} s" if isinstance(took, int | float) else ""
    cut = ", cut to fit" if meta.get("truncated") else ""
    args = meta.get("arguments")
    args_text = f" {code_span(json.dumps(args, ensure_ascii=False))}" if args else ""
    return f"> Tool {code_span(m.name or 'unnamed')}{where}{args_text}: {outcome}{took_text}{cut}"


def _answer_lines(messages: Sequence[Message]) -> list[str]:
    lines: list[str] = []
    for m in messages:
        if m.role == "tool":
            lines += [_tool_line(m), ""]
        elif m.content.strip():
            lines += [neutralised(m.content.strip()), ""]
    last = messages[-1] if messages else None
    if last is not None and last.role == "assistant" and last.status != "complete":
        reason = inline_text(last.finish_reason or "not ended")
        lines += [f"_(answer {last.status}: {reason})_", ""]
    return lines


def export_markdown(thread: Thread, messages: Sequence[Message], now_ms: int) -> str:
    """The conversation as a Markdown document."""
    title = inline_text(thread.title)
    lines = [f"# {title}", "", f"_Exported from Albert on {_when(now_ms)}._", ""]
    turns: dict[str, list[Message]] = {}
    for m in messages:
        turns.setdefault(m.turn_id, []).append(m)
    for turn in turns.values():
        for question in (m for m in turn if m.role == "user"):
            asked = neutralised(question.content.strip())
            lines += [f"## You · {_when(question.created_at)}", "", asked, ""]
        current = [m for m in turn if m.role != "user" and "version" not in m.meta]
        earlier: dict[int, list[Message]] = {}
        for m in turn:
            version = m.meta.get("version")
            if m.role != "user" and isinstance(version, int):
                earlier.setdefault(version, []).append(m)
        if current:
            lines += ["## Albert", "", *_answer_lines(current)]
            feedback = next((m.meta["feedback"] for m in current if "feedback" in m.meta), None)
            if isinstance(feedback, dict) and feedback.get("rating"):
                comment = f": {feedback['comment']}" if feedback.get("comment") else ""
                said = inline_text(f"{feedback['rating']}{comment}")
                lines += [f"_Feedback: {said}_", ""]
        for number, version in sorted(earlier.items()):
            lines += [f"### Earlier answer {number}", ""]
            lines += _answer_lines(version)
    return "\n".join(lines).rstrip() + "\n"
