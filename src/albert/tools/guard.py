"""The wrapper every tool call goes through: timeout, timing, error capture, the cut to fit.

It changes only how `execute` runs; name, description and schema pass through
untouched, so a remote tool reaches the model exactly as its server sent it. What it
adds to a result are our notes (`duration_ms`, `own_words`, `cut`), never words in the
tool's text.
"""

import asyncio
import logging
import time
from typing import Any

from albert.tools.base import Tool, ToolResult

log = logging.getLogger(__name__)


class ToolGuard:
    """Runs tools with a per-call timeout and a result size limit."""

    def __init__(self, *, timeout_seconds: float, max_chars: int) -> None:
        self._timeout = timeout_seconds
        self._max_chars = max_chars

    async def run(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        """Execute once; never raises for the tool's own failures."""
        started = time.monotonic()
        own_words = True
        try:
            result = await asyncio.wait_for(tool.execute(arguments), self._timeout)
            own_words = False
        except TimeoutError:
            result = ToolResult.error(f"{tool.name} timed out after {self._timeout:g} s")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The model gets a short, safe line; the details go to the log.
            log.exception("tool %s failed", tool.name)
            result = ToolResult.error(f"{tool.name} failed: {type(exc).__name__}")
        duration_ms = (time.monotonic() - started) * 1000
        return result.cut_to(self._max_chars).model_copy(
            update={"duration_ms": duration_ms, "own_words": own_words or result.own_words}
        )
