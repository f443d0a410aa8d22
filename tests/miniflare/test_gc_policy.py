"""The runtime's collector policy: survivors of full and generation-1 collections are frozen,
garbage cycles among frozen objects are still freed once the heap has grown enough (by a walk
asked for at once), and uninstalling gives everything back."""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable, Iterator

import pytest

from miniflare.gc_policy import FreezeSurvivors


class Node:
    """A container that can hold itself in a cycle."""

    def __init__(self) -> None:
        self.other: object = None


class Heap:
    """A heap size the test sets (the policy's `heap_size`)."""

    def __init__(self) -> None:
        self.blocks = 1000

    def __call__(self) -> int:
        return self.blocks


@pytest.fixture
def heap() -> Heap:
    return Heap()


@pytest.fixture
def scheduled() -> list[Callable[[], object]]:
    return []


@pytest.fixture
def policy(heap: Heap, scheduled: list[Callable[[], object]]) -> Iterator[FreezeSurvivors]:
    gc.collect()
    gc.unfreeze()
    policy = FreezeSurvivors(growth=2.0, schedule=scheduled.append, heap_size=heap).install()
    try:
        yield policy
    finally:
        policy.uninstall()
        gc.collect()


def cycle() -> tuple[Node, weakref.ref[Node]]:
    node = Node()
    node.other = node
    return node, weakref.ref(node)


def test_a_full_collection_freezes_what_survived_it(policy: FreezeSurvivors) -> None:
    kept = [Node() for _ in range(100)]
    gc.collect()
    assert policy.freezes == 1
    assert gc.get_freeze_count() >= len(kept)
    # Made after the freeze: still the collector's.
    late, late_ref = cycle()
    del late
    gc.collect()
    assert late_ref() is None


def test_young_collections_freeze_nothing_before_a_full_one(policy: FreezeSurvivors) -> None:
    gc.collect(0)
    gc.collect(1)  # no full walk yet (none since install, or since a thaw): nothing frozen
    assert policy.freezes == 0
    assert gc.get_freeze_count() == 0


def test_after_a_full_collection_generation_one_survivors_are_frozen(
    policy: FreezeSurvivors,
) -> None:
    gc.collect()
    frozen = gc.get_freeze_count()
    kept = [Node() for _ in range(500)]
    gc.collect(0)
    assert policy.freezes == 1  # a generation-0 pass freezes nothing
    gc.collect(1)  # its survivors would be promoted to the oldest generation: frozen
    assert policy.freezes == 2
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_objects(generation=2) == []
    # What dies in a cycle afterwards waits for a thaw.
    node, ref = cycle()
    gc.collect(1)
    del node
    gc.collect()
    assert ref() is not None


def test_cycles_that_die_frozen_are_freed_once_the_heap_doubles(
    policy: FreezeSurvivors, heap: Heap, scheduled: list[Callable[[], object]]
) -> None:
    node, ref = cycle()
    gc.collect()  # the cycle is alive: frozen with everything else
    del node
    gc.collect()
    assert ref() is not None  # frozen garbage waits
    heap.blocks = 1999
    gc.collect(1)
    assert policy.thaws == 0 and gc.get_freeze_count() > 0
    heap.blocks = 2000  # twice the heap after the last walk over everything
    gc.collect(1)  # a young pass is enough to see it: everything is thawed
    assert policy.thaws == 1
    assert gc.get_freeze_count() == 0
    assert len(scheduled) == 1  # and a walk over it all is asked for at once
    gc.collect(1)  # young passes freeze nothing until that walk
    assert gc.get_freeze_count() == 0
    scheduled.pop()()  # what the event loop runs next
    assert ref() is None
    assert gc.get_freeze_count() > 0  # the survivors are frozen again
    assert policy.thaws == 1 and scheduled == []
    # The new base is the heap after that walk: no thaw until it doubles again.
    heap.blocks = 3999
    gc.collect()
    assert policy.thaws == 1
    heap.blocks = 4000
    gc.collect()
    assert policy.thaws == 2


def test_a_scheduled_walk_is_skipped_once_a_full_collection_did_it(
    policy: FreezeSurvivors, heap: Heap, scheduled: list[Callable[[], object]]
) -> None:
    gc.collect()
    heap.blocks = 5000
    gc.collect()
    assert policy.thaws == 1 and len(scheduled) == 1
    gc.collect()  # a full collection came first: it walked everything
    freezes = policy.freezes
    scheduled.pop()()
    assert policy.freezes == freezes  # no second walk


def test_without_a_schedule_the_next_full_collection_walks_everything(heap: Heap) -> None:
    gc.collect()
    policy = FreezeSurvivors(growth=2.0, heap_size=heap).install()
    try:
        node, ref = cycle()
        gc.collect()
        del node
        heap.blocks = 2000
        gc.collect()
        assert policy.thaws == 1 and ref() is not None
        gc.collect()
        assert ref() is None
    finally:
        policy.uninstall()
        gc.collect()


def test_memory_stays_bounded_by_the_real_heap_size() -> None:
    """With the process's own allocated blocks: garbage cycles that die frozen are freed
    once the heap has doubled."""
    gc.collect()
    policy = FreezeSurvivors(growth=2.0).install()
    try:
        node, ref = cycle()
        gc.collect()
        del node
        gc.collect()
        assert ref() is not None
        growth = [Node() for _ in range(sys.getallocatedblocks())]
        gc.collect()  # the heap has more than doubled: thawed (maybe already while growing)
        assert policy.thaws >= 1
        gc.collect()  # and a pass walks it all
        assert ref() is None
        assert len(growth) > 0
    finally:
        policy.uninstall()
        gc.collect()


def test_uninstall_thaws_everything_and_stops_freezing() -> None:
    gc.collect()
    policy = FreezeSurvivors().install()
    policy.install()  # twice: still one callback
    try:
        assert gc.callbacks.count(policy._on_gc) == 1
        gc.collect()
        assert gc.get_freeze_count() > 0
    finally:
        policy.uninstall()
    assert gc.get_freeze_count() == 0
    assert policy._on_gc not in gc.callbacks
    gc.collect()
    assert gc.get_freeze_count() == 0


def test_growth_must_be_above_one() -> None:
    with pytest.raises(ValueError, match="above 1"):
        FreezeSurvivors(growth=1.0)


def test_the_frozen_set_is_never_counted(
    policy: FreezeSurvivors, heap: Heap, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts: list[int] = []
    real_count = gc.get_freeze_count

    def counted() -> int:
        counts.append(1)
        return real_count()

    monkeypatch.setattr(gc, "get_freeze_count", counted)
    for blocks in (1000, 1500, 2500, 1000, 1000):
        heap.blocks = blocks
        gc.collect(1)
        gc.collect()
    assert policy.thaws == 1
    assert counts == []  # a walk over every frozen object, inside the pause: never
