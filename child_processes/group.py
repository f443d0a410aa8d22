"""Layers 2 and 3 (see child_processes): every child still running is stopped at interpreter
exit, and SIGTERM/SIGHUP unwind a program like Ctrl-C so that happens; `Children` stops the
children of one owner together."""

from __future__ import annotations

import atexit
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from child_processes.child import ChildProcess, live_children


def stop_children(children: Sequence[ChildProcess], grace: float | None = None) -> None:
    """Signal all, newest first, then wait for each within one shared deadline."""
    ordered = list(reversed(children))
    for child in ordered:
        child.send_stop()
    longest = max((c.grace for c in ordered), default=0.0) if grace is None else grace
    deadline = time.monotonic() + longest
    for child in ordered:
        child.finish_stop(deadline)


def stop_all(grace: float | None = None) -> None:
    """Stop every child this process started and has not stopped (runs at exit)."""
    stop_children(live_children(), grace)


atexit.register(stop_all)


def _unwind(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def exit_on_signals(signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP)) -> None:
    """Make these signals unwind the program like Ctrl-C, so cleanup and `atexit` run.

    Only signals still at their default action are taken over, and only from the main
    thread (the only one that may set handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in signals:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _unwind)


class Children:
    """The children of one owner (e.g. `albert dev`): started with `spawn`, stopped together."""

    def __init__(self) -> None:
        self._children: list[ChildProcess] = []

    def add(self, child: ChildProcess) -> ChildProcess:
        """Own a child started elsewhere."""
        self._children.append(child)
        return child

    def spawn(self, args: Sequence[str], **options: Any) -> ChildProcess:
        """Start and own a child; `options` are ChildProcess's keyword arguments."""
        return self.add(ChildProcess(args, **options).start())

    def send_stop(self) -> None:
        """Signal every child to stop, newest first, without waiting."""
        for child in reversed(self._children):
            child.send_stop()

    def finish_stop(self, deadline: float) -> None:
        """Wait for every child until `deadline`, then SIGKILL what is left."""
        for child in reversed(self._children):
            child.finish_stop(deadline)

    def stop(self, grace: float | None = None) -> None:
        """Stop every child within one shared deadline."""
        stop_children(self._children, grace)

    def __iter__(self) -> Iterator[ChildProcess]:
        return iter(self._children)
