"""broker/heap_freezer.py on a real event loop: partitions made are frozen out of the full
collections once a burst is over, and a removed partition's cycles are collected after all."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from broker.heap_freezer import HeapFreezer, built_frozen, freeze_heap

QUIET_S = 0.05


@pytest.fixture(autouse=True)
def _frozen_as_found():
    """These tests unfreeze the heap; the test run froze what collection loaded (conftest.py)
    and leaves it so for the tests after them in this process."""
    was_frozen = gc.get_freeze_count() > 0
    yield
    if was_frozen:
        gc.freeze()


class Node:
    """A stand-in for a partition's objects: it sits in a reference cycle, as a log and its
    partition do, so only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


async def _settled(freezer: HeapFreezer) -> None:
    while freezer._timer is not None:
        await asyncio.sleep(QUIET_S / 5)


def test_a_burst_of_creations_is_frozen_once_it_is_quiet():
    async def run():
        freezer = HeapFreezer(QUIET_S)
        gc.unfreeze()
        kept = [Node() for _ in range(1000)]
        before = gc.get_freeze_count()
        for _ in range(1000):
            freezer.grew()
        assert gc.get_freeze_count() == before  # nothing before the burst is over
        await _settled(freezer)
        assert gc.get_freeze_count() >= before + len(kept)
        assert not any(gc.is_tracked(n) and n in gc.get_objects(2) for n in kept[:3])
    asyncio.run(run())


def test_a_removed_partitions_cycle_is_collected_though_it_was_frozen():
    async def run():
        freezer = HeapFreezer(QUIET_S)
        node = Node()
        gone = weakref.ref(node)
        freezer.grew()
        await _settled(freezer)
        del node
        gc.collect()
        assert gone() is not None  # frozen: no collection frees it
        freezer.shrank()
        await _settled(freezer)
        assert gone() is None
    asyncio.run(run())


def test_the_young_garbage_of_a_creation_is_not_frozen():
    young = Node()
    gone = weakref.ref(young)
    del young
    freeze_heap(full=False)
    assert gone() is None


def test_a_heap_built_frozen_is_never_walked_and_its_garbage_waits_for_a_full_collection():
    gc.unfreeze()
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        before = gc.get_freeze_count()
        with built_frozen():
            assert not gc.isenabled()
            kept = [Node() for _ in range(20_000)]  # far past the youngest generation's threshold
            garbage = Node()
            gone = weakref.ref(garbage)
            del garbage
        assert gc.isenabled() and collections == []  # none while it was built
        assert gc.get_freeze_count() >= before + len(kept)
        gc.collect()
        assert gone() is not None  # frozen with the heap: no collection walks it ...
        freeze_heap(full=True)
        assert gone() is None  # ... until the next full one (after a burst of deletions)
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
