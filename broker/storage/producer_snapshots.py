"""When the partitions' producer-state snapshots are taken (replica/producer_snapshot.py holds
the format and why they exist): every SNAPSHOT_INTERVAL_S for each partition whose log moved
since its last one, and once at a clean shutdown, after the last append.

A restart replays the batch headers past a partition's newest snapshot: after a clean stop
none, after a kill at most what was appended in the last interval (Kafka snapshots at each
segment roll; a time bound serves both layouts, the commitlog having no per-partition roll).
Each snapshot is copied on the event loop (a partition's producers, bounded) and encoded and
written in a worker thread, a round's files made durable by one syncfs (write_round), so the
loop never waits on a disk. A round visits only
the partitions whose logs changed since the last (replica/change_feed.py), not every one hosted.
"""

from __future__ import annotations

import asyncio
import logging

from replica.change_feed import Changed
from replica.partition import Partition
from replica.producer_snapshot import PendingSnapshot, write_round

log = logging.getLogger(__name__)

SNAPSHOT_INTERVAL_S = 10.0


class ProducerSnapshotTask:
    def __init__(self, changed: Changed[Partition], interval_s: float = SNAPSHOT_INTERVAL_S) -> None:
        self._changed = changed
        self._interval_s = interval_s
        self.in_flight: asyncio.Future | None = None  # shutdown waits for it

    def _take(self) -> list[PendingSnapshot]:
        """On the loop: the writes of every writable partition whose log moved."""
        writes = []
        for partition in self._changed.take():
            if not partition.read_only and (write := partition.replica_log.take_producer_snapshot()) is not None:
                writes.append(write)
        return writes

    async def write_all(self) -> None:
        """Snapshot every partition that moved, the files written in a worker thread."""
        writes = self._take()
        if not writes:
            return
        self.in_flight = asyncio.get_running_loop().run_in_executor(None, write_round, writes)
        await asyncio.shield(self.in_flight)  # a cancelled task leaves the writes to finish

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.write_all()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("producer-state snapshots failed")

    async def close(self) -> None:
        """At shutdown, once nothing appends: wait for a round in flight, then take the last."""
        if self.in_flight is not None:
            try:
                await self.in_flight
            except Exception:
                log.exception("producer-state snapshots failed")
        await self.write_all()

