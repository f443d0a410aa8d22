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
