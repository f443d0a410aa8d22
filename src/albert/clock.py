"""The clock port: wall time in milliseconds and a monotonic timer."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Time as the core sees it; tests may pass their own."""

    def now_ms(self) -> int:
        """Wall-clock Unix time in milliseconds."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for durations."""
        ...


class SystemClock:
    """The clock of the running interpreter (CPython or Pyodide alike)."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def monotonic(self) -> float:
        return time.monotonic()
