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
wait. To keep those bounded, once the frozen set has grown to `growth` times its size
after the last thaw, it is thawed (`gc.unfreeze()`) and the next full collection walks
everything once, frees those cycles, and the survivors are frozen again.
"""

from __future__ import annotations

import gc
from typing import Any


class FreezeSurvivors:
    """Installs the policy as a gc callback; `uninstall` removes it and thaws everything."""

    def __init__(self, growth: float = 2.0) -> None:
        if growth <= 1.0:
            raise ValueError("growth must be above 1")
        self.growth = growth
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
        if self._base and self._counted + self._added >= self.growth * self._base:
            self._counted, self._added = gc.get_freeze_count(), 0
            if self._counted >= self.growth * self._base:
                # Everything goes back: the next full collection walks it all once.
                gc.unfreeze()
                self._base = self._counted = self._added = 0
                self.thaws += 1
                return
        gc.freeze()
        self.freezes += 1
        self._added += added
        if not self._base:
            self._base = self._counted = max(1, gc.get_freeze_count())
            self._added = 0
