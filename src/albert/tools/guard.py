"""The wrapper every tool call goes through: timeout, timing, error capture, truncation.

It changes only how `execute` runs; name, description and schema pass through
untouched, so a remote tool reaches the model exactly as its server sent it.
"""

import asyncio
import logging
import time
from typing import Any, NamedTuple

from albert.tools.base import TextPart, Tool, ToolResult

log = logging.getLogger(__name__)

TRUNCATION_MARKER = (
    "\n\n[… result cut: {shown:,} of {total:,} characters shown. "
    "The rest was not sent to you; say so if it matters.]"
)


def _marker(shown: int, total: int) -> str:
    return TRUNCATION_MARKER.format(shown=shown, total=total)


class GuardedResult(NamedTuple):
    """A tool's result as the model will see it, with how the call went."""

    result: ToolResult
    duration_ms: float
    truncated: bool
    original_chars: int
    full_text: str = ""  # the whole output, before the cut
    shown_chars: int = 0  # how much of full_text the model sees
    # Albert wrote this result (a timeout, a failure, a refusal), not the tool: the model
    # gets it outside any untrusted-text fence (albert.tools.fence).
    own_words: bool = False


def truncate_result(result: ToolResult, max_chars: int) -> tuple[ToolResult, bool, int]:
    """Cut the text parts to `max_chars` in total, marking the cut visibly.

    The parts kept are a prefix of the whole text, so the model can read on from the
    length of what it saw (less the marker).
    """
    total = sum(len(p.text) for p in result.content)
    if total <= max_chars:
        return result, False, total
    budget = max_chars
    parts: list[TextPart] = []
    for part in result.content:
        if budget <= 0:
            break
        parts.append(TextPart(text=part.text[:budget]))
        budget -= len(part.text)
    marker = _marker(max_chars, total)
    parts[-1] = TextPart(text=parts[-1].text + marker)
    cut = ToolResult(content=parts, is_error=result.is_error, structured=None)
    return cut, True, total


class ToolGuard:
    """Runs tools with a per-call timeout and a result size limit."""

    def __init__(self, *, timeout_seconds: float, max_chars: int) -> None:
        self._timeout = timeout_seconds
        self._max_chars = max_chars

    async def run(self, tool: Tool, arguments: dict[str, Any]) -> GuardedResult:
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
        cut, truncated, total = truncate_result(result, self._max_chars)
        full_text = result.joined_text()
        shown = len(cut.joined_text()) - (len(_marker(self._max_chars, total)) if truncated else 0)
        return GuardedResult(
            result=cut,
            duration_ms=duration_ms,
            truncated=truncated,
            original_chars=total,
            full_text=full_text,
            shown_chars=shown,
            own_words=own_words,
        )
