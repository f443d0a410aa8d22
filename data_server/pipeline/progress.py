"""Progress reporting for pipeline runs: a rich terminal bar, or nothing."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class PipelineProgress(Protocol):
    """What the pipeline tells about its advance: one step per source, then publish."""

    def start(self, total_steps: int) -> None:
        """The run begins with this many steps."""
        ...

    def step(self, description: str) -> None:
        """One step finished; `description` says which and how it went."""
        ...

    def finish(self, summary: str) -> None:
        """The run is over."""
        ...


class NullProgress:
    """Reports nothing (tests, scheduled runs without a terminal)."""

    def start(self, total_steps: int) -> None:
        """Ignore."""

    def step(self, description: str) -> None:
        """Ignore."""

    def finish(self, summary: str) -> None:
        """Ignore."""


class RichProgress:
    """A terminal progress bar (rich): shown from ``start`` until ``finish``.

    Also a context manager, which makes sure the display stops if the run raises.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]pipeline[/bold]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self._task: int | None = None

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def start(self, total_steps: int) -> None:
        """Create the bar and start drawing it."""
        self._progress.start()
        self._task = self._progress.add_task("starting", total=total_steps)

    def step(self, description: str) -> None:
        """Advance the bar by one and show what finished."""
        if self._task is not None:
            self._progress.update(self._task, advance=1, description=description)
        self._progress.console.print(description)

    def finish(self, summary: str) -> None:
        """Show the summary under the bar."""
        if self._task is not None:
            self._progress.update(self._task, description=summary)
        self._progress.console.print(summary)
        self._progress.stop()
