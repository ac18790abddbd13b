"""Every share-partition this broker serves (Kafka's SharePartitionManager): a SharePartition per
(group, topic id, partition), read from the share coordinator (state_persister.py) the first time
it is used while this broker leads its partition at a leader epoch, fed from the log a fetch
reads, and written back before anyone is answered. A share-partition with no state yet starts at
share.auto.offset.reset's position (the log start, the high watermark, or by_duration's first
record at or after now less the duration, read through the time index; the high watermark when
none is), initialized at the coordinator before it is used, so a leader change finds the same
start; one led again after another broker led it is read afresh.

Each group's share.* configs (broker/settings/group_configs.py: its overrides over the broker's
values) are read every time a share-partition of it is used, so a change applies at the next
fetch: lock duration and delivery limit to records acquired from then on, auto.offset.reset to
share-partitions initialized from then on.

Acquiring reads the partition (replica.Partition) from the first offset that may be acquired
and takes the Available records of each batch read, whole batches until the fetch's max
records; a batch holding none it could take is left out of the response. Control batches are
archived, never handed out. A read_uncommitted group reads up to the high watermark; a
read_committed one up to the last stable offset, and archives the batches of aborted
transactions (aborted_batches.py), as Kafka's SharePartition does. Locks run out lazily: a share-partition's expired locks
are released whenever it is looked at (every fetch of it), and a fetch that waits wakes at the
next deadline of its partitions, at an append, or when any member releases records.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from wire.error_codes import ErrorCode
from replica.readable_partition import FetchIsolation

from broker.groups.share.aborted_batches import AbortedBatches
from broker.groups.share.fetched_batches import batches
from broker.groups.share.keyed_locks import KeyedLocks
from broker.groups.share.share_partition import (AckType, AcquiredRange, InvalidAcknowledgement, RecordState,
                                                 SharePartition, StateRange)
from broker.groups.share.state_shard import UNINITIALIZED
from broker.groups.share.state_persister import ShareStatePersister, ShareStateUnavailable
from broker.settings.group_configs import GroupShareConfig
from broker.settings.share_group_options import ShareSettings
from broker.settings.share_offset_reset import reset_timestamp

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
    def __init__(self, persister: ShareStatePersister, settings: ShareSettings,
                 config_of: Callable[[str], GroupShareConfig]) -> None:
        self.persister = persister
        self.settings = settings  # the broker's
        self.config_of = config_of  # a group's own, over the broker's
        self._partitions: dict[Key, SharePartition] = {}
        self._leader_epochs: dict[Key, int] = {}  # the data partition's leader epoch each was read at
        self._locks: KeyedLocks[Key] = KeyedLocks()  # one read or write of a key's state at a time
        self._written: dict[Key, tuple] = {}  # the last snapshot stored per key
        self._released: set[asyncio.Future] = set()  # fetches waiting for records to come back

    async def load(self, key: Key, partition) -> SharePartition:
        """The share-partition of `key`, whose log is `partition` (replica.Partition, led here);
        raises ShareStateUnavailable when its state cannot be read."""
        epoch = partition.leader_epoch
        sp = self._partitions.get(key)
        if sp is not None and self._leader_epochs.get(key) == epoch:
            return sp
        async with self._locks.hold(key):
            sp = self._partitions.get(key)
            if sp is not None and self._leader_epochs.get(key) == epoch:
                return sp
            s = self.config_of(key[0])
            kept = await self.persister.read(key, epoch)
            if kept.start_offset == UNINITIALIZED:
                start = _reset_start(s.auto_offset_reset, partition)
                await self.persister.initialize(key, kept.state_epoch, start)
                sp = SharePartition(start, s.lock_ms, s.delivery_limit, s.max_in_flight, kept.state_epoch)
            else:
                sp = SharePartition(kept.start_offset, s.lock_ms, s.delivery_limit, s.max_in_flight, kept.state_epoch,
                                    _archive_spent(kept.batches, s.delivery_limit))
            self._partitions[key], self._leader_epochs[key] = sp, epoch
            self._written[key] = sp.snapshot()
            return sp

    def acquire(self, key: Key, partition, member: str, max_records: int, max_bytes: int, now_ms: int,
                record_limit: bool = False) -> Acquired:
        """Records for `member` from `partition`'s log (its share-partition loaded): whole batches
        up to max_records, or with `record_limit` (ShareFetch v2's record-limit mode) never more
        than max_records; raises what partition.read raises."""
        sp = self._partitions[key]
        config = self.config_of(key[0])
        sp.lock_ms, sp.delivery_limit, sp.max_in_flight = config.lock_ms, config.delivery_limit, config.max_in_flight
        self.expire(sp, now_ms)
        sp.move_start_to(partition.log_start_offset)
        committed = config.isolation_level == "read_committed"
        isolation = FetchIsolation.TXN_COMMITTED if committed else FetchIsolation.HIGH_WATERMARK
        upper = partition.last_fetchable_offset(isolation)
        got = Acquired([], [])
        for _ in range(MAX_READS):
            offset = sp.next_fetch_offset()
            if offset is None or offset >= upper or got.records >= max_records:
                break
            last_read = offset - 1
            aborted = AbortedBatches(partition.aborted_transactions(offset, upper) if committed else [])
            for header, region in batches(partition.read(offset, max(max_bytes - got.size, 1), isolation)):
                last_read = header.last_offset
                if aborted.is_aborted(header) or header.is_control:  # the walk must see every marker
                    sp.skip(header.base_offset, header.last_offset)
                    continue
                ranges = sp.acquire(member, header.base_offset, header.last_offset, now_ms,
                                    max_records - got.records if record_limit else None)
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
                          now_ms: int) -> tuple[ErrorCode, str | None]:
        """Apply (first, last, types) acknowledgements, then write the state: (error, message).
        Each batch is all or nothing; a failed write is an error, never an acknowledgement.
        Raises ShareStateUnavailable when the share-partition's state cannot be read."""
        sp = await self.load(key, partition)
        self.expire(sp, now_ms)
        code, message = ErrorCode.none, None
        released = False
        for first, last, types in batches_:
            try:
                sp.acknowledge(member, first, last, types, now_ms=now_ms)
                released = released or AckType.RELEASE in types
            except InvalidAcknowledgement as exc:
                code, message = exc.error, str(exc)
        try:
            await self.persist(key)
        except ShareStateUnavailable as exc:
            log.error("share-partition %s: writing its state failed: %s", key, exc)
            return exc.error, f"the share-partition state could not be written: {exc}"
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
        """Store the share-partition's state as it is once earlier writes of it are done (a burst
        of changes costs one write, not one each); raises ShareStateUnavailable when it could
        not be stored."""
        async with self._locks.hold(key):
            sp = self._partitions[key]
            snapshot = sp.snapshot()
            if self._written.get(key) == snapshot:
                return  # an earlier waiter already wrote what this change made
            state_epoch, start, ranges = snapshot
            try:
                await self.persister.write(key, state_epoch, self._leader_epochs[key], start, ranges)
            except ShareStateUnavailable as exc:
                if exc.coordinator_error is ErrorCode.fenced_state_epoch:
                    self._drop(key)  # an admin reset the state meanwhile: the next use reads it afresh
                raise
            self._written[key] = snapshot

    def forget(self, keys) -> None:
        """Drop these share-partitions (an admin altered or deleted their state): the next use
        reads the state again. Their members are gone (an admin needs an empty group)."""
        for key in keys:
            self._drop(key)

    def drop_idle(self, group_id: str, fetched: set[Key]) -> None:
        """Drop the group's share-partitions no share session here fetches from (`fetched`: those
        some session holds) whose state is stored as it is: the next use reads it afresh. An
        admin may alter or delete an empty group's state through another broker, which this
        broker's copy would otherwise hand out and write back."""
        self.forget([k for k, sp in self._partitions.items()
                     if k[0] == group_id and k not in fetched and self._written.get(k) == sp.snapshot()])

    def _drop(self, key: Key) -> None:
        self._partitions.pop(key, None)
        self._leader_epochs.pop(key, None)
        self._written.pop(key, None)

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


def _reset_start(reset: str, partition) -> int:
    """Where a share-partition without state starts under share.auto.offset.reset `reset`: the
    partition's offset for its timestamp, as a read_uncommitted consumer's ListOffsets finds it
    (Kafka's ShareFetchUtils.offsetForTimestamp); the high watermark when no record is that new."""
    found = partition.fetch_offset_for_timestamp(reset_timestamp(reset, int(time.time() * 1000)),
                                                 FetchIsolation.HIGH_WATERMARK)
    return partition.high_watermark if found is None else found[0]
