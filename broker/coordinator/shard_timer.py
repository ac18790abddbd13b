"""The timers of one loaded coordinator partition (Kafka's CoordinatorTimer): a shard schedules an
operation under a key, and when the time comes the operation joins the partition's queue like a
request's, so it runs in order with them and its records are written the same way. Scheduling a
key again replaces its timer. The runtime cancels them all when the partition is unloaded: a
timer of a partition this broker no longer leads must not touch state that is gone.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Callable, Generic, TypeVar

from broker.coordinator.clock import Clock, TimerHandle

O = TypeVar("O")  # an operation of the shard


class ShardTimer(Generic[O]):
    def __init__(self, clock: Clock, submit: Callable[[O], None]) -> None:
        self.clock = clock
        self._submit = submit  # into the partition's queue
        self._timers: dict[Hashable, TimerHandle] = {}

    def schedule(self, key: Hashable, delay_ms: int, op: O) -> None:
        """Run `op` after `delay_ms`, replacing the timer `key` had."""
        self.cancel(key)

        def fire() -> None:
            del self._timers[key]
            self._submit(op)
        self._timers[key] = self.clock.call_later(delay_ms, fire)

    def cancel(self, key: Hashable) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def __contains__(self, key: Hashable) -> bool:
        return key in self._timers

    def __len__(self) -> int:
        return len(self._timers)
