"""Keeps the broker's long-lived heap (its modules, hosted partitions and their logs) out of the
cyclic garbage collector's full collections.

Why: CPython runs a full (generation 2) collection whenever the objects promoted since the last
one outnumber a quarter of those that survived it, and a full collection walks every tracked
object while the event loop waits. At 10,000 partitions created after start-up, one took 0.6-1.3
s, and steady produce (21,000 msg/s of 100 B) set one off about every 30 s. Frozen objects
(gc.freeze) are never walked. Start-up freezes what it opened (lifecycle.py), and this freezes
again once a burst of partition creations is over.

Start-up opens every partition with the collector off and freezes what it made (`built_frozen`):
it makes long-lived objects only, and the collections it set off were work thrown away (a clean
start of 50,000 partitions ran 5,355 of them, 19.1 s at load 7.7), as was a collection at its end.

Frozen cycles are never collected either, so once a burst of partition removals is over the
heap is unfrozen, collected in full and frozen again: one full collection per burst of topic
deletions, where there was one every ~30 s of traffic. Freezing costs nothing per object
(CPython splices the generations' lists); the collections before it are what take time.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

QUIET_S = 1.0  # a burst of creations or removals is over when none came for this long


def freeze_heap(full: bool) -> None:
    """Collect (in full, or the young generations only), then freeze every object alive."""
    if full:
        gc.unfreeze()  # what a full collection must see again: a removed partition's cycles
        gc.collect()
    else:
        gc.collect(1)  # a creation request's young garbage is not frozen with the partitions
    gc.freeze()


@contextmanager
def built_frozen() -> Iterator[None]:
    """No cyclic collection inside the block, and what it made frozen at its end: for a block
    that builds a long-lived heap (start-up opening every partition). Collecting as it grew
    walked the heap it was making over and over; collecting at its end walked it once more
    (2.5 s at 50,000 partitions), for cyclic garbage that is little and, frozen, is freed by the
    first full collection (a burst of deletions: freeze_heap(full=True))."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


class HeapFreezer:
    """Told of each partition made or removed on the event loop; freezes (after removals:
    collects, then freezes) once QUIET_S passes without another."""

    def __init__(self, quiet_s: float = QUIET_S) -> None:
        self._quiet_s = quiet_s
        self._last_change = 0.0
        self._full = False
        self._timer: asyncio.TimerHandle | None = None

    def grew(self) -> None:
        self._changed()

    def shrank(self) -> None:
        self._full = True
        self._changed()

    def _changed(self) -> None:
        self._last_change = time.monotonic()
        if self._timer is not None:
            return  # one timer a burst, not one per partition: _settle looks at the last change
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # opened before the loop runs: start-up's own freeze (lifecycle.py) covers it
        self._timer = loop.call_later(self._quiet_s, self._settle, loop)

    def _settle(self, loop: asyncio.AbstractEventLoop) -> None:
        wait = self._last_change + self._quiet_s - time.monotonic()
        if wait > 0:
            self._timer = loop.call_later(wait, self._settle, loop)
            return
        self._timer = None
        full, self._full = self._full, False
        freeze_heap(full)
