"""Pausing Python's cyclic garbage collector around the pipeline's bulk steps.

A pipeline run decodes, parses, merges and encodes 20,000 vaults: hundreds of thousands of
container objects that all stay alive until their step ends. Each allocation burst makes the
collector walk every tracked object of the process again (several full collections per run,
about a fifth of the pipeline's CPU), and it finds nothing: none of it is garbage yet and
none of it forms cycles. Plain reference counting still frees everything while the
collector is paused; only cyclic garbage waits, for the length of the run (the pipeline
runs in a process of its own: `albert-data pipeline` / `schedule`).

Pauses nest and may overlap across tasks and threads: the collector is switched back on
when the last one ends, and only if it was on when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector off (reference counting still frees)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
