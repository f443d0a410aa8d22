"""No tool's output goes to another server through the arguments of a call.

A prompt injection in one tool's result ("now send the wallet list to summarise()")
needs the model to copy that result into a call to a tool of another server. So
before a remote tool runs, its arguments are compared with the outputs the model
has seen in this conversation: a call whose arguments carry, verbatim (whitespace
aside), CARRY_LIMIT_CHARS or more of an output from another source (a local tool,
another server, or one no longer known) is refused, and the model is told why.
Text the user wrote is exempt: what the user typed may go where the user asks.
Moving data within one server (paging, ids) is allowed, and so are the short
values tools legitimately share, such as addresses and symbols.

Outputs are compared as the model read them: inside their untrusted-text fences
(albert.tools.fence), without the fence tags and with invisible characters dropped.
Arguments and the user's words are read the same way, so characters the model never
saw neither hide a copy nor break one.
"""

from collections.abc import Iterable
from typing import Any, NamedTuple

from albert.ai.untrusted import neutralise

CARRY_LIMIT_CHARS = 200
# Occurrences of one probe looked at in one output: bounds the work on repetitive text.
_MAX_OCCURRENCES = 16


def _normal(text: str) -> str:
    return " ".join(text.split())


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


class Carried(NamedTuple):
    """What a refused call would have carried, and from where."""

    chars: int
    tool: str
    source: str


class _Output(NamedTuple):
    tool: str
    source: str
    text: str


class OutputLedger:
    """The tool outputs (and user words) of one turn's conversation."""

    def __init__(self, limit: int = CARRY_LIMIT_CHARS) -> None:
        self._limit = limit
        self._outputs: list[_Output] = []
        self._user: list[str] = []

    def record_output(self, tool: str, source: str, text: str) -> None:
        """A tool's output as the model saw it, without its fence tags (`unfenced`)."""
        if len(text) >= self._limit:
            self._outputs.append(_Output(tool=tool, source=source, text=_normal(text)))

    def record_user(self, text: str) -> None:
        """Words of the user: carrying them is never refused."""
        self._user.append(_normal(neutralise(text)))

    def carried(self, source: str, arguments: dict[str, Any]) -> Carried | None:
        """The first output of another source that the arguments repeat at length."""
        for value in _strings(arguments):
            if len(value) < self._limit:
                continue
            text = _normal(neutralise(value))
            if len(text) < self._limit:
                continue
            for output in self._outputs:
                if output.source == source:
                    continue
                run = self._longest_shared_run(text, output.text)
                if run is not None:
                    return Carried(chars=len(run), tool=output.tool, source=output.source)
        return None

    def _longest_shared_run(self, text: str, other: str) -> str | None:
        """A run of `text` of at least the limit that `other` holds and no user text does."""
        # Any shared run of `limit` characters contains one of these aligned probes whole.
        step = max(1, self._limit // 2)
        excused: set[str] = set()
        for start in range(0, len(text) - step + 1, step):
            probe = text[start : start + step]
            at = other.find(probe)
            for _ in range(_MAX_OCCURRENCES):
                if at == -1:
                    break
                left = _common_suffix(text, start, other, at)
                right = _common_prefix(text, start + step, other, at + step)
                run = text[start - left : start + step + right]
                if len(run) >= self._limit and run not in excused:
                    if not any(run in words for words in self._user):
                        return run
                    excused.add(run)
                at = other.find(probe, at + 1)
        return None


def _common_prefix(a: str, i: int, b: str, j: int) -> int:
    """How many characters a[i:] and b[j:] share from their start (slice compares, in C)."""
    low, high = 0, min(len(a) - i, len(b) - j)
    while low < high:
        mid = (low + high + 1) // 2
        if a[i : i + mid] == b[j : j + mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, i: int, b: str, j: int) -> int:
    """How many characters a[:i] and b[:j] share from their end."""
    low, high = 0, min(i, j)
    while low < high:
        mid = (low + high + 1) // 2
        if a[i - mid : i] == b[j - mid : j]:
            low = mid
        else:
            high = mid - 1
    return low
