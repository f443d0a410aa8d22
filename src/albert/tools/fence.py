"""A tool's result as the model reads it: the tool's text fenced, Albert's notes outside.

Every result a tool produced reaches the model inside an `<untrusted source="…">` fence
(albert.ai.untrusted) naming the tool, and its server for a remote one. The platform's
own tools are fenced too: their text also comes from outside (token names and
descriptions, protocol names, feed posts). What Albert itself wrote stays outside the
fence, since it is no third party's: the result's preface (the line that says which
page of which call was read back), the cut note after a cut text, and the results the
loop writes instead of running a tool (a refusal, a declined confirmation, a timeout;
`own_words`). They are fields of the `ToolResult`, never text to find in the tool's.

This is applied once, where the model's messages are built (the current turn and the
history read back from storage), never to what is stored or shown.
"""

from __future__ import annotations

from albert.ai.untrusted import untrusted
from albert.tools.base import ToolResult


def result_source(tool: str, source: str | None) -> str:
    """Who wrote a tool's result, as its fence names it."""
    if source == "local":
        return f"platform tool {tool}"
    if not source or source in ("unknown", "earlier"):
        return f"tool {tool}"
    return f"tool {tool} of MCP server {source}"


def for_model(tool: str, source: str | None, result: ToolResult) -> str:
    """The content of the tool message the model gets for this result."""
    if result.own_words:
        return result.preface + result.shown_text() + result.cut_note()
    label = result.fence_label or result_source(tool, source)
    return result.preface + untrusted(label, result.shown_text()) + result.cut_note()
