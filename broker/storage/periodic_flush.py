"""flush.ms (the broker's log.flush.interval.ms is its default): a partition's appended data
is fsynced within flush.ms, whatever the producer's acks said.

As Kafka's LogManager.flushDirtyLogs, but only over the partitions written since their last
flush (replica/change_feed.py), so an idle broker does nothing per partition: a written
partition is due flush.ms after the first write its last flush did not cover (counted from the
look before the one that saw it), and a due flush covers everything written when it starts. The
check runs on the event loop every shortest flush.ms of the hosted topics, at least every
MAX_WAIT_MS (a topic altered to a shorter flush.ms is noticed within that); the fsyncs run in a
worker thread, the engines' flush being thread-safe against appends (group commit relies on it
too).

Layouts: the segment layout fsyncs the due partitions' own files and records their recovery
points; in the commitlog layout every partition's records lie in one shared commitlog, so a
due partition fsyncs it, and every partition of that store counts as flushed then — the
shortest flush.ms among them sets the cadence.

Whatever flush.ms says, each pass also runs the stores' background flush (LogStore.background_flush):
the commitlog layout's checkpoint, which fsyncs the consume queues and the key index once a
minute or per commitlog file of new units, apart from any acknowledgement, as RocketMQ's
FlushConsumeQueueService does. Whether one is due is asked on the loop: a store with nothing due
costs no thread.
flush.messages, the other flush policy, is the write path's (replica/write_path.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Hashable, TypeVar

from replica.change_feed import Changed
from replica.partition import Partition

log = logging.getLogger(__name__)

P = TypeVar("P", bound=Hashable)
MAX_WAIT_MS = 1000
MIN_WAIT_MS = 10  # flush.ms=0 flushes at this cadence rather than spinning


class FlushSchedule:
    """Which written partitions are due, from their flush.ms and when they were written; the
    caller's clock (ms)."""

    def __init__(self) -> None:
        self._since: dict = {}  # partition -> since when it holds writes no flush covered

    def written(self, partitions: Iterable[P], now_ms: float) -> None:
        for p in partitions:
            self._since.setdefault(p, now_ms)

    def due(self, flush_ms_of: Callable[[P], int | None], now_ms: float) -> tuple[list[P], float]:
        """The partitions due now, forgotten here until written again, and how long until the
        next one is (ms). `flush_ms_of(p)`: its flush.ms; negative (never) or None (no longer
        hosted) forgets it."""
        due, wait = [], MAX_WAIT_MS
        for p, since in list(self._since.items()):
            flush_ms = flush_ms_of(p)
            if flush_ms is None or flush_ms < 0:
                del self._since[p]
                continue
            left = since + flush_ms - now_ms
            if left <= 0:
                due.append(p)
                del self._since[p]
            else:
                wait = min(wait, left)
        return due, max(wait, MIN_WAIT_MS)

    def flushed(self, covered: Callable[[P], bool]) -> None:
        """A flush that started after every write recorded here covered those `covered(p)` says."""
        for p in [p for p in self._since if covered(p)]:
            del self._since[p]

    def __len__(self) -> int:
        return len(self._since)


class PeriodicFlush:
    """The broker's task running the schedule over its written partitions and its stores."""

    def __init__(self, topics, storage, changed: Changed[Partition]) -> None:
        self._topics, self._storage = topics, storage
        self._changed = changed
        self.schedule = FlushSchedule()
        self.in_flight: asyncio.Future | None = None  # shutdown waits for it

    def _hosted(self, p: Partition) -> tuple[str, int] | None:
        """(storage mode, flush.ms) of a partition still hosted here and writable, else None."""
        topic = self._topics.topics.get(p.topic)
        if topic is None or p.read_only or p.index >= len(topic.partitions) or topic.partitions[p.index] is not p:
            return None
        return topic.mode_of(p.index), p.config.flush_ms

    def _shortest_flush_ms(self) -> float:
        """The shortest flush.ms of any hosted topic (MAX_WAIT_MS if none is shorter): how soon
        a write not yet seen could be due. Per topic, not per partition: they share configs."""
        shortest = MAX_WAIT_MS
        for topic in self._topics.topics.values():
            p = next((p for p in topic.partitions if p is not None), None)
            if p is not None and 0 <= p.config.flush_ms < shortest:
                shortest = p.config.flush_ms
        return shortest

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        looked = loop.time() * 1000
        while True:
            now = loop.time() * 1000
            # A write seen now was made after the last look: counting it from then flushes it
            # within flush.ms of the write, not flush.ms after this look.
            self.schedule.written(self._changed.take(), looked)
            looked = now
            hosted: dict[Partition, tuple[str, int] | None] = {}

            def flush_ms_of(p: Partition) -> int | None:
                where = hosted[p] = self._hosted(p)
                return None if where is None else where[1]

            due, wait_ms = self.schedule.due(flush_ms_of, now)
            by_mode: dict[str, list[Partition]] = {}
            for p in due:
                by_mode.setdefault(hosted[p][0], []).append(p)
            for mode, partitions in by_mode.items():
                await self._flush(mode, partitions, now)
            await self._background_flush()
            await asyncio.sleep(max(min(wait_ms, self._shortest_flush_ms()), MIN_WAIT_MS) / 1000)

    async def _background_flush(self) -> None:
        """Each store's own background durability (LogStore.background_flush: the commitlog's
        checkpoint of its consume queues), which no acknowledgement waits for."""
        for store in self._storage.opened().values():
            if not store.background_flush_due():
                continue
            self.in_flight = asyncio.get_running_loop().run_in_executor(None, store.background_flush)
            try:
                await asyncio.shield(self.in_flight)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background flush failed")

    async def _flush(self, mode: str, partitions: list[Partition], started_ms: float) -> None:
        store = self._storage.store(mode)
        store.commit_writes()  # on the loop: the flush in its thread covers only what is written
        keys = [(p.topic, p.index) for p in partitions]
        # Shielded: cancelling the task at shutdown must not leave a flush running in its
        # thread while close() closes the files; close() waits for it instead.
        self.in_flight = asyncio.get_running_loop().run_in_executor(None, store.flush_partitions, keys)
        try:
            flushed = await asyncio.shield(self.in_flight)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("periodic flush failed")
            self.schedule.written(partitions, started_ms)  # due again at the next look
            return
        if len(flushed) > len(keys):  # the store's partitions share their files: all were covered
            also = set(flushed)

            def covered(p: Partition) -> bool:
                where = self._hosted(p)
                return where is not None and where[0] == mode and (p.topic, p.index) in also

            self.schedule.flushed(covered)
