"""Readable validation errors: what a pydantic error says, one line per invalid field.

Used wherever input is validated (frames, HTTP bodies, tool arguments), so the
browser and the model read the same wording.
"""

from __future__ import annotations

from pydantic import ValidationError


def validation_message(exc: ValidationError) -> str:
    """One readable line per invalid field, for the model to fix its call."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def validation_fields(exc: ValidationError) -> list[tuple[str | None, str]]:
    """Each error as (the top-level field at fault, or None for the whole body; message)."""
    out: list[tuple[str | None, str]] = []
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        field = str(loc[0]) if loc else None
        msg = str(err["msg"])
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        out.append((field, msg))
    return out


def frame_error_message(exc: ValidationError) -> str:
    """What is wrong with a WebSocket frame, worded as a frame error (not as arguments)."""
    lines = []
    for err in exc.errors(include_url=False):
        kind, loc, msg = err["type"], err["loc"], err["msg"]
        ctx = err.get("ctx") or {}
        if kind == "json_invalid":
            return f"frame is not valid JSON ({ctx.get('error') or msg})"
        if kind == "union_tag_not_found":
            lines.append(f"frame has no {ctx.get('discriminator', 'type')} field")
        elif kind == "union_tag_invalid":
            expected = ctx.get("expected_tags", "")
            lines.append(f"unknown frame type {ctx.get('tag')!r}; expected one of {expected}")
        elif not loc:
            lines.append(f"frame: {msg}")
        else:
            tag, *field = (str(p) for p in loc)
            lines.append(f"{tag} frame: {'.'.join(field) or 'frame'}: {msg}")
    return "; ".join(lines)


def quoted_input(value: str, limit: int) -> str:
    """A caller's value as an error message quotes it: whole up to `limit` characters, else
    its head and its length (an error must not echo 100 kB back)."""
    if len(value) <= limit:
        return repr(value)
    return repr(value[:limit]) + f"… ({len(value):,} characters)"
