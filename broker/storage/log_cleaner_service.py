"""The broker's log cleaner threads (Kafka's LogCleaner): compaction off the event loop.

`log.cleaner.threads` threads each loop over the partitions whose cleanup.policy compacts,
clean one that is due (dirty ratio / max compaction lag, segment/compaction/cleaning_policy.py),
and sleep `log.cleaner.backoff.ms` when none is. Two threads never clean one partition. The
dedupe buffer (`log.cleaner.dedupe.buffer.size`) is shared out among the threads, as Kafka does.

A round reads and writes files in its thread; only the swap (of a group of segments into the
partition's segment list, or of a commitlog partition's compacted generation) runs on the event loop (a few renames and unlinks), where every
reader of that list runs, so a fetch never sees half a swap and produce is never held for
more than that. Where each partition's next round starts (its first dirty offset) is kept in
the data dir's cleaner-offset-checkpoint (segment/compaction/cleaner_checkpoint.py), written
after each round, so a restarted broker does not clean every compacted log again from its start.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Callable, TypeVar

from replica.partition import Partition
from segment.log import PartitionLog

from segment.compaction.cleaner_checkpoint import CLEANER_CHECKPOINT, CleanerCheckpoint
from segment.compaction.cleaning_policy import compacts
from segment.kafka import log_cleaner as segment_cleaner
from segment.kafka.partition_log import SegmentPartitionLog
from segment.rocket import log_cleaner as commitlog_cleaner
from segment.rocket.partition_log import RocketPartitionLog

from broker.api.topic_lookup import TopicLookup
from broker.settings.config import BrokerConfig

log = logging.getLogger(__name__)
T = TypeVar("T")

# Each layout's cleaner offers the same two calls: due(plog, first_dirty, now_ms, last_stable_offset=) and
# clean(plog, first_dirty, now_ms, memory_bytes, run_on_owner, last_stable_offset=) -> stats (end_offset,
# bytes_read...).
_CLEANERS: dict[type[PartitionLog], ModuleType] = {SegmentPartitionLog: segment_cleaner,
                                                   RocketPartitionLog: commitlog_cleaner}


class LogCleanerService:
    def __init__(self, config: BrokerConfig, topics: TopicLookup, loop: asyncio.AbstractEventLoop) -> None:
        self._topics = topics
        self._loop = loop
        self._threads_wanted = max(1, config.log_cleaner_threads)
        self._memory = max(config.log_cleaner_dedupe_buffer_size // self._threads_wanted, 1 << 20)
        self._backoff = config.log_cleaner_backoff_ms / 1000
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._busy: set[tuple[str, int]] = set()
        self._checkpoint = CleanerCheckpoint(Path(config.data_dir) / CLEANER_CHECKPOINT)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self._threads_wanted):
            thread = threading.Thread(target=self._run, name=f"log-cleaner-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    async def stop(self) -> None:
        """Stop the threads, on the loop, before the stores close: a round in progress ends at
        its next swap, which the loop still runs while this waits for the threads."""
        self._stop.set()
        for thread in self._threads:
            await asyncio.to_thread(thread.join)

    def _on_loop(self, fn: Callable[[], T]) -> T:
        """Run fn() on the event loop and wait for its result (the owner of the segment lists)."""
        async def call() -> T:
            return fn()
        if self._stop.is_set():
            raise _Stopped()
        return asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                cleaned = self._clean_one()
            except _Stopped:
                return
            except Exception:  # the loop is gone (shutdown) or a bug: never kill the thread silently
                log.exception("log cleaner round failed")
                cleaned = False
            if not cleaned:
                self._stop.wait(self._backoff)

    def _clean_one(self) -> bool:
        # The last stable offset is read once: it only grows while the round runs (a truncation,
        # which could lower it, rolls the round back at its swap).
        partitions = self._on_loop(self._compacted)
        now = segment_cleaner.now_ms()
        for topic, index, plog, stable in partitions:
            key = (topic, index)
            if not isinstance(plog, (SegmentPartitionLog, RocketPartitionLog)) or plog.offline is not None:
                continue
            cleaner = _CLEANERS[type(plog)]
            with self._lock:
                if key in self._busy:
                    continue
                first_dirty = self._checkpoint.first_dirty(key, plog)
                if not cleaner.due(plog, first_dirty, now, last_stable_offset=stable):
                    continue
                self._busy.add(key)
            try:
                self._clean(cleaner, key, plog, first_dirty, now, stable)
            finally:
                with self._lock:
                    self._busy.discard(key)
            return True
        return False

    def _compacted(self) -> list[tuple[str, int, PartitionLog, int]]:
        """On the loop: (topic, index, log, last stable offset) of each partition whose topic
        compacts. Topics are skipped whole (their partitions share the config), so a round costs
        nothing per partition of a topic that only deletes."""
        found = []
        for topic in self._topics.topics.values():
            hosted = [p for p in topic.partitions if isinstance(p, Partition)]  # None: hosted elsewhere
            if hosted and compacts(hosted[0].config.cleanup_policy):
                found += [(p.topic, p.index, p.log_for_cleaning(), p.last_stable_offset) for p in hosted]
        return found

    def _clean(self, cleaner: ModuleType, key: tuple[str, int], plog: PartitionLog, first_dirty: int, now: int,
               stable: int) -> None:
        started, cpu_started = time.monotonic(), time.thread_time()
        try:
            stats = cleaner.clean(plog, first_dirty, now, self._memory, self._on_loop, last_stable_offset=stable)
        except _Stopped:
            raise
        except Exception:
            log.exception("cleaning %s-%d failed; it is tried again at the next round", *key)
            return
        if stats.end_offset is None:
            return
        self._checkpoint.cleaned(key, plog, stats.end_offset)
        took = max(time.monotonic() - started, 1e-6)
        log.info("cleaned %s-%d up to offset %d: %.1f MB read, %.1f MB written, %d records dropped, "
                 "%d groups swapped in %.2f s (%.1f MB/s, %.2f s of this thread's CPU)", key[0], key[1],
                 stats.end_offset, stats.bytes_read / 1e6, stats.bytes_written / 1e6, stats.records_dropped,
                 stats.groups_swapped, took, stats.bytes_read / 1e6 / took, time.thread_time() - cpu_started)


class _Stopped(Exception):
    """The broker is stopping: the round ends before its next swap."""
