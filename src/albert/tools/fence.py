"""A tool's result as the model reads it: the tool's text fenced, Albert's notes outside.

Every result a tool produced reaches the model inside an `<untrusted source="…">` fence
(albert.ai.untrusted) naming the tool, and its server for a remote one. The platform's
own tools are fenced too: their text also comes from outside (token names and
descriptions, protocol names, feed posts). What Albert itself wrote stays outside the
fence, since it is no third party's: the cut marker after a cut result, the read-on hint,
the header of a page read back, and the results the loop writes instead of running a
tool (a refusal, a declined confirmation, a timeout; `own_words`).

This is applied where the model's messages are built (the current turn and the history
read back from storage), never to what is stored or shown: stored threads keep the
tool's text as it was, and an old thread is fenced when it is sent again.
"""

from __future__ import annotations

import re

from albert.ai.untrusted import untrusted
from albert.tools.guard import TRUNCATION_MARKER
from albert.tools.read_tool_result import NAME as READ_TOOL
from albert.tools.read_tool_result import page_header

# The guard's cut marker with its two figures as patterns, anchored at the end. Looked
# for only when the result is known to be cut (the outcome or the stored meta says so),
# so a tool cannot put text outside its fence by ending with a marker of its own.
_CUT_AT_END = re.compile(
    r"[\d,]+".join(re.escape(part) for part in re.split(r"\{\w+:,\}", TRUNCATION_MARKER)) + r"\Z"
)


def result_source(tool: str, source: str | None) -> str:
    """Who wrote a tool's result, as its fence names it."""
    if source == "local":
        return f"platform tool {tool}"
    if not source or source in ("unknown", "earlier"):
        return f"tool {tool}"
    return f"tool {tool} of MCP server {source}"


def for_model(
    tool: str,
    source: str | None,
    text: str,
    *,
    truncated: bool = False,
    own_words: bool = False,
) -> str:
    """The content of the tool message the model gets for this result."""
    if own_words:
        return text
    head, label, body = "", result_source(tool, source), text
    if tool == READ_TOOL and source == "local":
        found = page_header(text)
        if found is not None:
            head, call_id = found
            label, body = f"output of call {call_id} read back", text[len(head) :]
    tail = ""
    if truncated:
        cut = _CUT_AT_END.search(body)
        if cut is not None:
            body, tail = body[: cut.start()], cut.group(0)
    return head + untrusted(label, body) + tail
