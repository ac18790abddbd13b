"""The time and the timers of the group coordinators (classic, KIP-848 consumer, streams and share
groups), as Kafka's GroupMetadataManager takes them from its CoordinatorShard: a group's timers
are timers of its `__consumer_offsets` partition in the coordinator runtime
(broker/coordinator/runtime.py, loaded by group_loading.py), on the runtime's clock.

- `now_ms()` is the runtime's clock: what a group's state timestamp and its records' times say.
- `schedule(group_id, delay_ms, callback)` sets a timer on the ShardTimer of the group's
  partition; when it fires, a `Fire` operation joins that partition's queue, and the partition's
  shard runs `callback` in order with the partition's other operations (`fire`); a callback that
  must write (an expired member's records) returns a coroutine, which runs on as a task. The
  handle returned cancels that timer alone: a member or group that goes cancels its own, so the
  partition's timers hold only what is live.
- A partition that stops being led here has its timers cancelled by the runtime, with its
  groups unloaded (group_loading.py).

A single broker coordinates its groups also before `__consumer_offsets` exists (it is made on
first use): a timer set then, with no partition to belong to, runs on the same clock outside any
queue.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, NamedTuple

from broker.coordinator.clock import Clock
from broker.coordinator.shard_timer import ShardTimer

log = logging.getLogger(__name__)

Callback = Callable[[], Awaitable[None] | None]
Timer = ShardTimer[Any]  # a partition's: its queue takes a Fire among the shard's other operations


class Fire(NamedTuple):
    """The operation a group timer submits into its partition's queue."""

    callback: Callback


class GroupTimer:
    """One scheduled timer: `cancel()` cancels it, and nothing else."""

    __slots__ = ("_timer", "_key")

    def __init__(self, timer: Timer, key: Hashable) -> None:
        self._timer = timer
        self._key = key

    def cancel(self) -> None:
        self._timer.cancel(self._key)


class GroupTimers:
    def __init__(self, partition_index: Callable[[str], int | None], clock: Clock) -> None:
        """`partition_index(group_id)`: the group's `__consumer_offsets` partition (None while the
        topic does not exist)."""
        self.clock = clock
        self._partition_index = partition_index
        self._partitions: dict[int, Timer] = {}  # of the partitions loaded here
        self._unplaced: Timer = ShardTimer(clock, self.fire)
        self._order = itertools.count()
        self._running: set[asyncio.Task] = set()  # callbacks' coroutines, until they end

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # --- the partitions, as group_loading.py loads and unloads them --------------------------------

    def partition_loaded(self, index: int, timer: Timer) -> None:
        self._partitions[index] = timer

    def partition_unloaded(self, index: int, timer: Timer) -> None:
        if self._partitions.get(index) is timer:
            del self._partitions[index]

    # --- timers ------------------------------------------------------------------------------------

    def schedule(self, group_id: str, delay_ms: float, callback: Callback, what: str) -> GroupTimer:
        """Run `callback` in the group's partition after `delay_ms`; `what` names the timer in logs."""
        timer = self._timer_of(group_id)
        key = (what, group_id, next(self._order))
        timer.schedule(key, max(0, int(delay_ms)), Fire(callback))
        return GroupTimer(timer, key)

    def fire(self, op: Fire) -> None:
        """A timer's operation, in its partition's turn: a coroutine the callback returns runs on."""
        result = op.callback()
        if result is not None:
            task = asyncio.ensure_future(result)
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    def _timer_of(self, group_id: str) -> Timer:
        index = self._partition_index(group_id)
        return self._unplaced if index is None else self._partitions.get(index, self._unplaced)

    def __len__(self) -> int:
        """Timers set and not yet fired or cancelled, in every partition."""
        return len(self._unplaced) + sum(len(timer) for timer in self._partitions.values())
