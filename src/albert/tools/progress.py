"""Progress a running tool reports, on its way to the chat's tool chip.

The tool loop sets a reporter for each call it runs (`reporting`); a tool, or the MCP
connection on a remote tool's behalf, reports through it without knowing who listens.
Outside a call nothing is listening and a report is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Reporter = Callable[[float, float | None, str | None], None]

_current: ContextVar[Reporter | None] = ContextVar("tool_progress", default=None)


def current_reporter() -> Reporter | None:
    """Who listens to the running call's progress (None outside a call)."""
    return _current.get()


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Within the block (and tasks started in it), progress goes to `reporter`."""
    token = _current.set(reporter)
    try:
        yield
    finally:
        _current.reset(token)
