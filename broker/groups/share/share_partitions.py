"""Every share-partition this broker serves (Kafka's SharePartitionManager): a SharePartition per
(group, topic id, partition), loaded from its state file at first use or started at the
group's share.auto.offset.reset position, fed from the log a fetch reads, and written back
before anyone is answered.

Acquiring reads the partition (replica.Partition, up to the high watermark) from the first offset
that may be acquired and takes the Available records of each batch read, whole batches until the
fetch's max records; a batch holding none it could take is left out of the response. Control
batches are archived, never handed out. Locks run out lazily: a share-partition's expired locks
are released whenever it is looked at (every fetch of it), and a fetch that waits wakes at the
next deadline of its partitions, at an append, or when any member releases records.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

from replica.readable_partition import FetchIsolation

from broker.groups.share.fetched_batches import batches
from broker.groups.share.share_partition import (AckType, AcquiredRange, InvalidAcknowledgement, RecordState,
                                                 SharePartition, StateRange)
from broker.groups.share.state_file import ShareStateFiles
from broker.settings.share_group_options import ShareSettings

log = logging.getLogger(__name__)
Key = tuple[str, uuid.UUID, int]  # group id, topic id, partition
MAX_READS = 4  # reads per partition per fetch, when batches read were already taken by others


@dataclass
class Acquired:
    regions: list
    ranges: list[AcquiredRange]
    records: int = 0
    size: int = 0


class SharePartitions:
    def __init__(self, files: ShareStateFiles, settings: ShareSettings) -> None:
        self.files = files
        self.settings = settings
        self._partitions: dict[Key, SharePartition] = {}
        self._released: set[asyncio.Future] = set()  # fetches waiting for records to come back

    def get(self, key: Key, partition) -> SharePartition:
        """The share-partition of `key`; `partition` (replica.Partition) places a new one.
        Raises state_file.MalformedShareState."""
        sp = self._partitions.get(key)
        if sp is None:
            s = self.settings
            kept = self.files.load(*key)
            if kept is not None:
                epoch, start, ranges = kept
                sp = SharePartition(start, s.lock_ms, s.delivery_limit, s.max_in_flight, epoch + 1,
                                    _archive_spent(ranges, s.delivery_limit))
            else:
                start = partition.log_start_offset if s.auto_offset_reset == "earliest" else partition.high_watermark
                sp = SharePartition(start, s.lock_ms, s.delivery_limit, s.max_in_flight)
            self._partitions[key] = sp
        return sp

    def acquire(self, key: Key, partition, member: str, max_records: int, max_bytes: int, now_ms: int) -> Acquired:
        """Records for `member` from `partition`'s log; raises what partition.read raises."""
        sp = self.get(key, partition)
        self.expire(sp, now_ms)
        sp.move_start_to(partition.log_start_offset)
        got = Acquired([], [])
        for _ in range(MAX_READS):
            offset = sp.next_fetch_offset()
            if offset is None or offset >= partition.high_watermark or got.records >= max_records:
                break
            last_read = offset - 1
            for header, region in batches(partition.read(offset, max(max_bytes - got.size, 1),
                                                         FetchIsolation.HIGH_WATERMARK)):
                last_read = header.last_offset
                if header.is_control:
                    sp.skip(header.base_offset, header.last_offset)
                    continue
                ranges = sp.acquire(member, header.base_offset, header.last_offset, now_ms)
                if not ranges:
                    continue
                got.regions.append(region)
                got.ranges.extend(ranges)
                got.records += sum(r.last - r.first + 1 for r in ranges)
                got.size += header.size
                if got.records >= max_records or got.size >= max_bytes:
                    break
            if last_read < offset or got.size >= max_bytes:
                break
        return got

    async def acknowledge(self, key: Key, partition, member: str, batches_: list[tuple[int, int, tuple[int, ...]]],
                          now_ms: int) -> tuple[str, str | None]:
        """Apply (first, last, types) acknowledgements, then write the state: (error, message).
        Each batch is all or nothing; a failed write is an error, never an acknowledgement."""
        sp = self.get(key, partition)
        self.expire(sp, now_ms)
        code, message = "none", None
        released = False
        for first, last, types in batches_:
            try:
                sp.acknowledge(member, first, last, types)
                released = released or AckType.RELEASE in types
            except InvalidAcknowledgement as exc:
                code, message = exc.error, str(exc)
        try:
            await self.persist(key)
        except OSError as exc:
            log.error("share-partition %s: writing its state failed: %s", key, exc)
            return "kafka_storage_error", f"the share-partition state could not be written: {exc}"
        if released:
            self.wake()
        return code, message

    def expire(self, sp: SharePartition, now_ms: int) -> None:
        if sp.expire_locks(now_ms):
            self.wake()

    def release_member(self, group_id: str, member_id: str, keys=None) -> list[Key]:
        """The member's acquired records back to Available (in `keys`, or everywhere in the
        group); returns the keys that changed, to be persisted."""
        changed = [k for k, sp in self._partitions.items()
                   if k[0] == group_id and (keys is None or k in keys) and sp.release_member(member_id)]
        if changed:
            self.wake()
        return changed

    async def persist(self, key: Key) -> None:
        """Store the share-partition's state; raises OSError when it could not be stored."""
        sp = self._partitions[key]
        await self.files.save(*key, sp.snapshot)

    def loaded(self, key: Key) -> SharePartition | None:
        return self._partitions.get(key)

    def next_deadline_ms(self, keys) -> int | None:
        deadlines = [d for k in keys if (sp := self._partitions.get(k)) is not None
                     and (d := sp.next_deadline_ms()) is not None]
        return min(deadlines, default=None)

    # --- waiting fetches ------------------------------------------------------------------------

    def add_waiter(self, fut: asyncio.Future) -> None:
        self._released.add(fut)

    def discard_waiter(self, fut: asyncio.Future) -> None:
        self._released.discard(fut)

    def wake(self) -> None:
        for fut in self._released:
            if not fut.done():
                fut.set_result(None)
        self._released.clear()


def _archive_spent(ranges: tuple[StateRange, ...], delivery_limit: int) -> tuple[StateRange, ...]:
    """A record whose lock ran out at its last allowed delivery, its archiving not yet written
    when the broker stopped, is archived now (as it would have been)."""
    return tuple(r._replace(state=RecordState.ARCHIVED)
                 if r.state is RecordState.AVAILABLE and r.delivery_count >= delivery_limit else r
                 for r in ranges)
