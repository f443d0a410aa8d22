"""What every benchmark reports, and the statistics behind it.

A figure is never judged alone: it is set against a baseline measured in the same run on
the same machine, so a noisy shared machine moves both and the ratio stays meaningful.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field


class Spread(BaseModel):
    """Median of repeated samples, with the extremes."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Spread:
        """The spread of at least one sample."""
        if not samples:
            raise ValueError("no samples")
        return cls(
            median=statistics.median(samples), min=min(samples), max=max(samples), n=len(samples)
        )


class Row(BaseModel):
    """One reported figure: what was measured, against what, and whether the target holds."""

    bench: str
    metric: str
    unit: str
    figure: Spread
    baseline: Spread | None = None
    baseline_label: str = ""
    ratio: float | None = Field(None, description="figure median / baseline median")
    target: str = ""
    met: bool | None = Field(None, description="None when the row has no target")
    note: str = ""


class BenchSizes(BaseModel):
    """How big and how often: `quick` keeps the whole suite to a couple of minutes."""

    quick: bool

    def pick(self, quick: int, full: int) -> int:
        """The quick or the full value."""
        return quick if self.quick else full


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark: an async function from sizes to rows."""

    name: str
    title: str
    run: Callable[[BenchSizes], Awaitable[list[Row]]]


def ratio(figure: Spread, baseline: Spread) -> float | None:
    """Median over median; None when the baseline is zero."""
    return figure.median / baseline.median if baseline.median > 0 else None


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) by linear interpolation between closest ranks."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class Stopwatch:
    """perf_counter in milliseconds."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def ms(self) -> float:
        """Milliseconds since creation."""
        return (time.perf_counter() - self.started) * 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (from /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def read_rss_kib(pid: int) -> int | None:
    """Resident set size of a process from /proc (KiB), None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None
