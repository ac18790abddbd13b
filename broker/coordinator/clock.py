"""The time a coordinator runtime reads and the timers it sets (Kafka's Time and Timer, injected
into its CoordinatorRuntime): `SystemClock` is the wall clock and the event loop's timers;
`ManualClock` is a test's, whose time moves only when the test advances it, firing the timers
that fall due on the way, so a test of a session timeout or a transaction's expiry takes no
real time and cannot flake on a slow machine.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Callable, Protocol

from replica.partition import now_ms


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch (what records and timeouts compare)."""
        ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        """Run `callback` on the event loop once `delay_ms` have passed, unless cancelled first."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return now_ms()

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000, callback)


class _ManualTimer:
    __slots__ = ("due_ms", "callback", "cancelled")

    def __init__(self, due_ms: int, callback: Callable[[], None]) -> None:
        self.due_ms = due_ms
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms
        self._due: list[tuple[int, int, _ManualTimer]] = []  # (due, order set, timer): a heap
        self._order = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(self._now + max(0, delay_ms), callback)
        heapq.heappush(self._due, (timer.due_ms, next(self._order), timer))
        return timer

    def advance(self, ms: int) -> None:
        """Move time on by `ms`, running each timer due by then at its own time, earliest first
        (those set at the same time in the order they were set)."""
        until = self._now + ms
        while self._due and self._due[0][0] <= until:
            due, _, timer = heapq.heappop(self._due)
            self._now = max(self._now, due)
            if not timer.cancelled:
                timer.callback()
        self._now = until

    @property
    def pending(self) -> int:
        """Timers set and neither fired nor cancelled."""
        return sum(1 for _, _, t in self._due if not t.cancelled)
