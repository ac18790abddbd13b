"""flush.ms (the broker's log.flush.interval.ms is its default): a partition's appended data
is fsynced within flush.ms, whatever the producer's acks said.

As Kafka's LogManager.flushDirtyLogs: a partition is due once flush.ms has passed since its
last flush (or since it was first seen here), and a due flush covers everything written when
it starts. The check runs on the event loop, at most every MAX_WAIT_MS (a topic altered to a
shorter flush.ms is noticed within that) and otherwise when the next partition falls due; the
fsyncs run in a worker thread, the engines' flush being thread-safe against appends (group
commit relies on it too).

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
from collections.abc import Iterable

log = logging.getLogger(__name__)

Key = tuple[str, int]
MAX_WAIT_MS = 1000
MIN_WAIT_MS = 10  # flush.ms=0 flushes at this cadence rather than spinning


class FlushSchedule:
    """Which partitions are due, from their flush.ms and their last flush; the caller's clock."""

    def __init__(self) -> None:
        self._last: dict[Key, float] = {}  # when each was last flushed (or first seen), ms

    def due(self, partitions: Iterable[tuple[Key, int]], now_ms: float) -> tuple[list[Key], float]:
        """Given (key, flush.ms) of every partition hosted now (a negative flush.ms: never),
        the keys due and how long until the next one is (ms). Forgets partitions not given."""
        due, wait, seen = [], MAX_WAIT_MS, {}
        for key, flush_ms in partitions:
            seen[key] = last = self._last.get(key, now_ms)
            if flush_ms < 0:
                continue
            left = last + flush_ms - now_ms
            if left <= 0:
                due.append(key)
                left = flush_ms  # due again that long after the flush it gets now
            wait = min(wait, left)
        self._last = seen
        return due, max(wait, MIN_WAIT_MS)

    def flushed(self, keys: Iterable[Key], started_ms: float) -> None:
        """These partitions were fsynced by a flush that started at `started_ms`."""
        for key in keys:
            if key in self._last:
                self._last[key] = started_ms


class PeriodicFlush:
    """The broker's task running the schedule over its topics' partitions and stores."""

    def __init__(self, topics, storage) -> None:
        self._topics, self._storage = topics, storage
        self.schedule = FlushSchedule()
        self.in_flight: asyncio.Future | None = None  # shutdown waits for it before closing files

    def _hosted(self) -> dict[str, list[tuple[Key, int]]]:
        """(key, flush.ms) of every writable partition hosted here, by storage mode."""
        by_mode: dict[str, list[tuple[Key, int]]] = {}
        for topic in self._topics.topics.values():
            for p in topic.partitions:
                if p is not None and not p.read_only:
                    by_mode.setdefault(topic.mode_of(p.index), []).append(((p.topic, p.index), p.config.flush_ms))
        return by_mode

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            by_mode = self._hosted()
            now = loop.time() * 1000
            due, wait_ms = self.schedule.due((entry for entries in by_mode.values() for entry in entries), now)
            due_set = set(due)
            for mode, entries in by_mode.items():
                keys = [key for key, _ in entries if key in due_set]
                if keys:
                    await self._flush(mode, keys, now)
            await self._background_flush()
            await asyncio.sleep(wait_ms / 1000)

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

    async def _flush(self, mode: str, keys: list[Key], started_ms: float) -> None:
        store = self._storage.store(mode)
        store.commit_writes()  # on the loop: the flush in its thread covers only what is written
        # Shielded: cancelling the task at shutdown must not leave a flush running in its
        # thread while close() closes the files; close() waits for it instead.
        self.in_flight = asyncio.get_running_loop().run_in_executor(None, store.flush_partitions, keys)
        try:
            flushed = await asyncio.shield(self.in_flight)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("periodic flush failed")
            return
        self.schedule.flushed(flushed, started_ms)
