"""A clock the test moves by hand, in the shape every clock port of the project takes."""

from __future__ import annotations


class ManualClock:
    """Wall time in ms and monotonic seconds from one counter, moved only by the test."""

    def __init__(self, start_ms: int) -> None:
        self.ms = start_ms

    def now_ms(self) -> int:
        return self.ms

    def monotonic(self) -> float:
        return self.ms / 1000

    def advance(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)
