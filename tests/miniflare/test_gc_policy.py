"""The runtime's collector policy: survivors of a full collection are frozen, garbage cycles
among frozen objects are still freed once the frozen set has grown enough, and uninstalling
gives everything back."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import pytest

from miniflare.gc_policy import FreezeSurvivors


class Node:
    """A container that can hold itself in a cycle."""

    def __init__(self) -> None:
        self.other: object = None


@pytest.fixture
def policy() -> Iterator[FreezeSurvivors]:
    gc.collect()
    gc.unfreeze()
    policy = FreezeSurvivors(growth=2.0).install()
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


def test_young_collections_freeze_nothing(policy: FreezeSurvivors) -> None:
    gc.collect(0)
    gc.collect(1)
    assert policy.freezes == 0
    assert gc.get_freeze_count() == 0


def test_cycles_that_die_frozen_are_freed_once_the_frozen_set_doubles(
    policy: FreezeSurvivors,
) -> None:
    node, ref = cycle()
    gc.collect()  # the cycle is alive: frozen with everything else
    base = gc.get_freeze_count()
    del node
    gc.collect()
    assert ref() is not None  # frozen garbage waits
    growth = [Node() for _ in range(base + 1000)]  # the frozen set doubles
    thaws = policy.thaws
    gc.collect()  # the freeze that doubles it thaws everything at once
    assert policy.thaws == thaws + 1
    assert gc.get_freeze_count() == 0
    gc.collect()  # and this pass walks it all
    assert ref() is None
    assert gc.get_freeze_count() > 0  # the survivors are frozen again
    assert len(growth) > base


def test_the_walk_after_a_thaw_is_scheduled_at_once() -> None:
    gc.collect()
    gc.unfreeze()
    scheduled: list[Callable[[], object]] = []
    policy = FreezeSurvivors(growth=2.0, schedule=scheduled.append).install()
    try:
        node, ref = cycle()
        gc.collect()
        base = gc.get_freeze_count()
        del node
        growth = [Node() for _ in range(base + 1000)]
        gc.collect()  # doubled: thawed, and the walk is asked for now
        assert policy.thaws == 1
        assert len(scheduled) == 1
        assert ref() is not None
        scheduled.pop()()  # what the event loop runs next: one full pass over everything
        assert ref() is None
        assert gc.get_freeze_count() >= len(growth)  # survivors frozen, a new base set
        assert policy.thaws == 1
        assert scheduled == []
        gc.collect()
        freezes = policy.freezes
        gc.collect()
        assert policy.freezes == freezes + 1 and scheduled == []  # no new walk asked for
    finally:
        policy.uninstall()
        gc.collect()


def test_a_scheduled_walk_is_skipped_once_a_full_collection_did_it() -> None:
    gc.collect()
    gc.unfreeze()
    scheduled: list[Callable[[], object]] = []
    policy = FreezeSurvivors(growth=2.0, schedule=scheduled.append).install()
    try:
        gc.collect()
        growth = [Node() for _ in range(gc.get_freeze_count() + 1000)]
        gc.collect()
        assert len(scheduled) == 1
        gc.collect()  # a full collection came first: it walked everything
        freezes = policy.freezes
        scheduled.pop()()
        assert policy.freezes == freezes  # no second walk
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


def test_the_frozen_set_is_counted_only_when_a_thaw_could_be_due(
    policy: FreezeSurvivors, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.collect()  # the first freeze sets the base (one count of the frozen set)
    base = gc.get_freeze_count()
    counts: list[int] = []
    real_count = gc.get_freeze_count

    def counted() -> int:
        counts.append(1)
        return real_count()

    monkeypatch.setattr(gc, "get_freeze_count", counted)
    for _ in range(5):
        gc.collect()  # next to nothing added: no walk over the frozen set
    assert counts == []
    assert policy.freezes == 6 and policy.thaws == 0
    growth = [[] for _ in range(base + 1000)]
    gc.collect()  # frozen with the rest: the set may have doubled, so it is counted, and thawed
    assert len(counts) == 1
    assert policy.thaws == 1
    assert len(growth) > base
