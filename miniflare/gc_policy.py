"""The runtime process's garbage-collector policy: survivors of a full collection are frozen.

On the platform every Durable Object is an isolate with a heap of its own. Here all objects
share one: a thousand objects hold ~0.5 million tracked Python objects (services, sockets,
tools, settings), and every full collection of the cyclic collector walked all of them,
finding almost nothing. Such a pass stops the event loop, so it stops every object at
once: 250–700 ms each, every few seconds under load (gc callbacks on the concurrency
benchmark), and each pause makes every turn in flight that much later, then a backlog.

So after each full collection, what survived it is moved out of the collector's sight
(`gc.freeze()`): the next full collections walk only what was allocated since. Reference
counting still frees frozen objects that are dropped; only garbage *cycles* among them
wait. To keep those bounded, as soon as a freeze makes the frozen set `growth` times its
size after the last thaw, it is thawed (`gc.unfreeze()`) and a full collection walks
everything once, frees those cycles, and the survivors are frozen again.

That walk is the longest pause there is (~0.3 s over a thousand objects' heap), so it is
done right when the threshold is crossed, through `schedule` (the event loop's
`call_soon`), while the heap is growing, and not at whichever full collection comes next,
seconds later and with the heap's growth long over. Without `schedule` the next full
collection does it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any


class FreezeSurvivors:
    """Installs the policy as a gc callback; `uninstall` removes it and thaws everything."""

    def __init__(
        self, growth: float = 2.0, schedule: Callable[[Callable[[], object]], object] | None = None
    ) -> None:
        if growth <= 1.0:
            raise ValueError("growth must be above 1")
        self.growth = growth
        self._schedule = schedule
        # Frozen objects right after the last full pass over everything (0: none yet).
        self._base = 0
        # The frozen set when it was last counted, and the survivors frozen since then.
        self._counted = 0
        self._added = 0
        self.freezes = 0
        self.thaws = 0
        self._installed = False

    def install(self) -> FreezeSurvivors:
        """Start freezing after full collections (a second install is a no-op)."""
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
            self._base = self._counted = self._added = 0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        # After a full collection every survivor is in the oldest generation: what is frozen
        # now. Counting the frozen set itself walks all of it (~0.5 million objects, tens of
        # ms inside the pause), so it is counted only when the survivors added since the
        # last count could have reached the thaw threshold.
        added = len(gc.get_objects(generation=2))
        gc.freeze()
        self.freezes += 1
        if not self._base:
            self._base = self._counted = max(1, gc.get_freeze_count())
            self._added = 0
            return
        self._added += added
        if self._counted + self._added < self.growth * self._base:
            return
        self._counted, self._added = gc.get_freeze_count(), 0
        if self._counted >= self.growth * self._base:
            # Everything goes back, and is walked once right away (see the module's doc).
            gc.unfreeze()
            self._base = self._counted = self._added = 0
            self.thaws += 1
            if self._schedule is not None:
                self._schedule(self._walk)

    def _walk(self) -> None:
        if self._installed and not self._base:
            gc.collect()
