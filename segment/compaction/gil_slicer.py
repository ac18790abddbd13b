"""Bounding how long a log cleaner thread holds the GIL at a stretch.

The cleaner walks every record in Python (offset map, batch filter) in a thread of the
broker's process, so it shares one GIL with the event loop. CPython hands the GIL to a
waiting thread only when its holder blocks, or after the holder ignored a waiter for a whole
switch interval (5 ms). The loop blocks (epoll, send, pwrite) several times per request and
must take the GIL back after each, so with a cleaner computing non-stop every such return
waits up to 5 ms: produce p99 went from 2-7 ms to 52-354 ms while cleaning (bench/README.md;
py-spy showed the loop thread in take_gil's timed wait after epoll_wait for 40% of its time).

A cleaner calls `tick()` once per record or batch. After `slice_s` of work since its last
pause it sleeps `pause_s`: blocking releases the GIL and wakes a waiting thread at once, so
the loop waits at most about one slice per return instead of a switch interval. The pause is
what it costs the cleaner (with the defaults ~10% of its speed when it has a core to itself;
on a busy machine the sleep gives the core, not only the GIL, to others).
"""

from __future__ import annotations

import time
from collections.abc import Callable

SLICE_S = 0.001
PAUSE_S = 0.0001


class GilSlicer:
    def __init__(self, slice_s: float = SLICE_S, pause_s: float = PAUSE_S,
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep) -> None:
        self.slice_s = slice_s
        self.pause_s = pause_s
        self._clock = clock
        self._sleep = sleep
        self._slice_start = clock()
        self.pauses = 0

    def tick(self) -> None:
        """Pause if this thread has held the GIL for a slice (a clock read otherwise)."""
        if self._clock() - self._slice_start >= self.slice_s:
            self._sleep(self.pause_s)
            self.pauses += 1
            self._slice_start = self._clock()

    def each(self, items):
        """The items, ticking before each."""
        for item in items:
            self.tick()
            yield item
