"""The runtime process's garbage-collector policy: what survives collections is frozen.

On the platform every Durable Object is an isolate with a heap of its own. Here all objects
share one: a thousand objects hold ~0.4 million tracked Python objects (services, sockets,
tools, settings), and every full collection of the cyclic collector walked all of them,
finding almost nothing. Such a pass stops the event loop, so it stops every object at
once: 250–700 ms each, every few seconds under load (gc callbacks on the concurrency
benchmark), and each pause makes every turn in flight that much later, then a backlog.

So after each full collection, what survived it is moved out of the collector's sight
(`gc.freeze()`), and from then on so is what survives a generation-1 collection (what the
collector would otherwise promote into the oldest generation): a full collection then
walks next to nothing, instead of every object set up or woken since the last one (30–85 ms
every few seconds at 1,000 objects, measured). Reference counting still frees frozen
objects that are dropped; only garbage *cycles* among them wait, and those cost memory. To
keep them bounded, once the process's allocated memory blocks (`sys.getallocatedblocks`,
every Python object is one or more) have grown to `growth` times what they were after the
last walk over everything, it all is thawed (`gc.unfreeze()`) and a full collection walks
everything once, frees those cycles, and the survivors are frozen again. Frozen garbage
therefore never holds more than `growth - 1` times the memory the heap had then. (The
frozen set itself is not counted: `gc.get_freeze_count` walks all of it, 20–40 ms each time.)

That walk is the longest pause there is (~0.2–0.3 s over a thousand objects' heap), so it
is done right when the threshold is crossed, through `schedule` (the event loop's
`call_soon_threadsafe`: a collection can run on any thread), while the heap is growing,
and not at whichever full collection comes next, seconds later and with the heap's growth
long over. Without `schedule` the next full collection does it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any


class FreezeSurvivors:
    """Installs the policy as a gc callback; `uninstall` removes it and thaws everything."""

    def __init__(
        self,
        growth: float = 2.0,
        schedule: Callable[[Callable[[], object]], object] | None = None,
        heap_size: Callable[[], int] = sys.getallocatedblocks,
    ) -> None:
        if growth <= 1.0:
            raise ValueError("growth must be above 1")
        self.growth = growth
        self._schedule = schedule
        self._heap_size = heap_size
        # The heap's size right after the last walk over everything (0: no walk yet since
        # the last thaw, so nothing is frozen).
        self._base = 0
        self.freezes = 0
        self.thaws = 0
        self._installed = False

    def install(self) -> FreezeSurvivors:
        """Start freezing after collections (a second install is a no-op)."""
        if not self._installed:
            gc.callbacks.append(self._on_gc)
            self._installed = True
        return self

    def uninstall(self) -> None:
        """Stop, and give everything frozen back to the collector."""
        if self._installed:
            gc.callbacks.remove(self._on_gc)
            self._installed = False
            gc.unfreeze()
            self._base = 0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop":
            return
        generation = info.get("generation")
        if generation == 2:
            # Every survivor is in the oldest generation now, and nothing else is tracked.
            gc.freeze()
            self.freezes += 1
            if not self._base:
                self._base = max(1, self._heap_size())
                return
        elif generation == 1 and self._base:
            # The survivors were just promoted to the oldest generation: frozen instead.
            # Not before the first full collection after a thaw, which has to walk them.
            gc.freeze()
            self.freezes += 1
        else:
            return
        if self._heap_size() >= self.growth * self._base:
            # Everything goes back, and is walked once right away (see the module's doc).
            gc.unfreeze()
            self._base = 0
            self.thaws += 1
            if self._schedule is not None:
                self._schedule(self._walk)

    def _walk(self) -> None:
        if self._installed and not self._base:
            gc.collect()
