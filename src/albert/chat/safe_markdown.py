"""Markdown from a conversation made safe to open in any Markdown viewer.

An exported thread is opened in editors, previews and wikis that render Markdown with raw
HTML allowed, load images as they render them and follow any link. What a model wrote (or
a prompt injection made it write) must not do there what the chat's own renderer forbids
(web/js/markdown.js): no raw HTML, no image (its URL can carry data out as the viewer
loads it) and no link but http(s) and mailto. Code is kept as written.

How, line by line, without a Markdown parser of our own:

- A fenced code block that opens at column 0 keeps its lines as they are: such a line
  opens a fenced block at the top level in every CommonMark renderer, once nothing outside
  the blocks can open raw HTML (below). Its fences are written anew, longer than any run
  of the fence's character inside, so that no renderer ends it early or late, and a block
  still open at the end of the message is closed, so nothing after it becomes code. A
  blank line goes before it (a GFM table would take it as a row), and an opening line
  with a `|` is not trusted (markdown-it would take it for a table's header).
- Every other line is text: `<` becomes `&lt;`, `[` and `]` entities (no link, image or
  reference definition can start), backticks that do not pair on the same line entities
  too (a backtick fence indented or inside a list or quote then opens nothing), and a
  tilde fence not trusted as one loses its tildes. Code spans that pair on one line
  are kept, unless a `|` in them would let a GFM table split them or they follow a bare
  URL (which a GFM renderer may link on through the backtick).
- Kept from the text: an inline link to an http(s) or mailto URL written plainly
  (`[text](https://…)`), and an image written plainly becomes its alt text (what the chat
  shows).

Entities rather than backslashes: they read the same in every Markdown dialect.
"""

from __future__ import annotations

import re

_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_TILDES = re.compile(r"^(?P<indent>[ \t]*)(?P<tildes>~{3,})")
_RUN = re.compile(r"`+")
# Link text and destination written plainly: nothing in them a renderer could read as
# another construct (brackets, backticks, `<`, spaces or parentheses in the URL).
_LINK = re.compile(
    r"\[(?P<text>[^\[\]`<>\n]{1,500})\]"
    r"\((?P<dest>(?:https?://|mailto:)[^\s()<>\[\]`\"'\\]{1,2000})\)"
)
_IMAGE = re.compile(
    r"!\[(?P<alt>[^\[\]`<>\n]{0,500})\]\((?P<dest>[^\s()<>]*)(?:\s+\"[^\"\n]*\")?\)"
)
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ENTITIES = {"<": "&lt;", "[": "&#91;", "]": "&#93;", "`": "&#96;", "~": "&#126;"}


def neutralised(markdown: str) -> str:
    """The Markdown with no raw HTML, image or unsafe link, its code blocks kept."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        opened = _opens(lines[i])
        if opened is None:
            out.append(inline_text(lines[i]))
            i += 1
            continue
        char, length, info = opened
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], char, length):
            body.append(lines[i])
            i += 1
        i += 1  # past the closing line, or the end
        if out and out[-1].strip():
            out.append("")
        # Fenced anew, longer than any run of its character inside: renderers disagree on
        # which lines close a fence (marked takes "```~" and refuses "```" and a tab), so
        # no line of the block may look like a closing one to any of them.
        fence = char * max(3, _longest_run(body, char) + 1)
        out += [f"{fence}{info}", *body, fence]
    return "\n".join(out)


def inline_text(line: str) -> str:
    """One line of text outside code blocks, neutralised (also for titles and labels)."""
    line = " ".join(line.splitlines())
    tildes = _TILDES.match(line)
    if tildes is not None:
        indent, run = tildes["indent"], tildes["tildes"]
        line = indent + _ENTITIES["~"] * len(run) + line[len(indent) + len(run) :]
    out: list[str] = []
    i, end = 0, len(line)
    while i < end:
        char = line[i]
        if char == "\\" and i + 1 < end and line[i + 1] in _PUNCTUATION:
            # An escape already. As an entity where it guards something: a GFM renderer
            # that links a bare URL takes the backslash into the link, and the character
            # it guarded would act again.
            escaped = line[i + 1]
            out.append(_ENTITIES.get(escaped, line[i : i + 2]))
            i += 2
        elif char == "`":
            run = _RUN.match(line, i)
            assert run is not None
            span = None if _in_bare_url(line, i) else _code_span(line, i, len(run[0]))
            if span is not None:
                out.append(line[i:span])
                i = span
            else:
                out.append(_ENTITIES["`"] * len(run[0]))
                i = run.end()
        elif char == "!" and (image := _IMAGE.match(line, i)) is not None:
            out.append(image["alt"] or "(image)")
            i = image.end()
        elif char == "[" and (link := _LINK.match(line, i)) is not None:
            out.append(link[0])
            i = link.end()
        elif char in "<[]":
            out.append(_ENTITIES[char])
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def code_span(text: str) -> str:
    """`text` as one inline code span that no backtick in it can end early."""
    text = " ".join(text.splitlines()) or " "
    longest = max((len(run) for run in _RUN.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    padded = text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip())
    pad = " " if padded else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _opens(line: str) -> tuple[str, int, str] | None:
    """The fence a line opens at column 0, as (character, length, info string), or None
    (CommonMark: a backtick fence's info string has no backtick)."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    fence, info = match["fence"], match["info"]
    if fence[0] == "`" and "`" in info:
        return None
    if "|" in info:
        # With a delimiter row under it, markdown-it reads the line as a table's header
        # (its table rule comes before fences) and what follows as text.
        return None
    return fence[0], len(fence), info


def _closes(line: str, char: str, length: int) -> bool:
    """True when the line closes a fence of `length` times `char` (CommonMark)."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return False
    run = len(stripped) - len(stripped.lstrip(char))
    return run >= length and not stripped[run:].strip(" \t")


def _longest_run(lines: list[str], char: str) -> int:
    runs = (len(run) for line in lines for run in re.findall(re.escape(char) + "+", line))
    return max(runs, default=0)


def _in_bare_url(line: str, at: int) -> bool:
    """True when the text just before `at` may be a bare URL: GFM renderers that link
    those (marked) run the link on through a backtick, so no code span starts there."""
    word = line[:at].rsplit(None, 1)[-1] if line[:at].strip() else ""
    lowered = word.lower()
    return "://" in lowered or "www." in lowered


def _code_span(line: str, start: int, length: int) -> int | None:
    """Where the code span opened by the run at `start` ends, if it closes on this line
    and a GFM table cannot split it; None otherwise."""
    for run in _RUN.finditer(line, start + length):
        if len(run[0]) == length:
            return None if "|" in line[start : run.start()] else run.end()
    return None
