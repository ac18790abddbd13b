"""The one write path (Kafka's ReplicaManager.appendRecords): every append this broker makes as a
leader goes through `WritePath.append`, whoever asks for it.

    produce (broker/handlers/produce.py)          ┐
    transaction markers (broker/txn/marker_append) │   1. leader append, in request order
    committed offsets (groups/offsets_store.py)    ├─► 2. flush.messages: fsync (group_commit.py)
    transaction state, share-group state           │   3. publish the high watermark
      (broker/coordinator/)                        ┘   4. acks=all: wait until the HW passes it

1. Each write is a producer batch (`RecordsWrite`) or a transaction marker (`MarkerWrite`) for a
   partition; the partition decides whether it may take it (leader, leader epoch, ISR against
   min.insync.replicas for acks=all, the producer's epoch and sequence, the topic's record
   rules) and its replica log stores it. What refuses a write is mapped here, once, to Kafka's
   error code (`WriteResult.error`, an ErrorCode): nothing of a refused write is stored.
   A client's batch must also leave the data dir above its free-space floor
   (broker/storage/health.py); the broker's own records (offsets, state, markers) may use the
   room below it, as Kafka's internal topics do.
2. The flush policy is the topic's, for every writer alike, internal topics included (Kafka
   applies flush.messages to `__consumer_offsets` as to any log): flush.messages = N fsyncs a
   partition once N messages were appended since the last fsync was decided, and the write that
   reaches N waits for that fsync before it counts (fsynced_end.py). N = 1 fsyncs every write
   before it is acknowledged; the messages between two fsyncs at N > 1 are acknowledged from the
   page cache (up to N - 1 may be lost in a power cut: what the setting trades); N = 0 never
   fsyncs on count. flush.ms is the broker's periodic flush (broker/storage/periodic_flush.py),
   again for every partition. The fsyncs are grouped per file (group_commit.py): one fsync of the
   commitlog answers every partition of a request, and a request's segment files are fsynced
   concurrently.
3. A partition that needs no fsync publishes its log end at once (after the request's last
   append); one that does publishes only the offset its fsync covered, so with
   flush.messages = 1 the HW never counts a record a power cut could take back. A failed fsync
   publishes nothing and answers KAFKA_STORAGE_ERROR: the log is offline.
4. With acks=all a write counts once the HW passes it (every ISR member has it), within the
   caller's timeout: REQUEST_TIMED_OUT past it, NOT_LEADER_OR_FOLLOWER if leadership moved,
   NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas meanwhile.

The appends happen when `append` is awaited, in order, with the event loop given to other
connections every WORK_SLICE_S (one produce of 5,000 partitions held it 0.3-1.3 s); the waits of
steps 2-4 are `PendingWrites.completed`, so a connection can append the requests pipelined
behind this one meanwhile and one fsync covers them all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from segment.log import AppendInfo, StorageError
from wire.error_codes import ErrorCode
from wire.record_batch import BatchHeader
from wire.record_walk import RecordSummary

from .group_commit import GroupCommits
from .partition import Partition
from .partition_errors import PartitionError
from .producer_state import CoordinatorFenced, OutOfOrderSequence, ProducerFenced
from .record_checks import RecordError, RecordsRejected
from .txn_verification import VerificationGuard

log = logging.getLogger(__name__)

WORK_SLICE_S = 0.005


@dataclass(slots=True)
class RecordsWrite:
    """A producer batch, validated (wire/record_batch.validate_produced) but not yet stored."""

    partition: Partition
    batch: bytearray
    header: BatchHeader
    walked: RecordSummary | None = None  # the produce check's walk: keys (for a log that indexes them), timestamps
    from_client: bool = True  # a client's batch: the free-space floor applies
    coordinator: bool = False  # the group coordinator's batch for a producer: its epoch alone is checked
    verified: VerificationGuard | None = None  # a transaction's first batch, checked with its coordinator


@dataclass(slots=True)
class MarkerWrite:
    """A transaction's COMMIT or ABORT marker (WriteTxnMarkers, or a local coordinator)."""

    partition: Partition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


Write = RecordsWrite | MarkerWrite


@dataclass(slots=True)
class WriteResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    info: AppendInfo | None = None  # where it was stored (a duplicate batch: where it was before)
    record_errors: tuple[RecordError, ...] = ()  # INVALID_RECORD's records, by index in the batch

    @property
    def ok(self) -> bool:
        return self.error is ErrorCode.none


class WritePath:
    def __init__(self, commits: GroupCommits, claim: Callable[[int, str], None] = lambda n, what: None,
                 warn: Callable[..., None] = log.warning) -> None:
        """`claim(bytes, what)`: the free-space floor for a client's batch (raises WriteRefused);
        `warn(fmt, *args)`: how a refused write is logged (rate-limited by the broker)."""
        self.commits = commits
        self._claim = claim
        self._warn = warn

    async def append(self, writes: Sequence[Write], acks: int) -> PendingWrites:
        """Append each write now, in order; the results of refused ones are final at once, the
        others' after `PendingWrites.completed`."""
        results: list[WriteResult] = []
        stored: list[tuple[int, Partition, int]] = []  # (position, partition, offset the HW must reach)
        messages: dict[Partition, int] = {}
        slice_started = time.monotonic()
        for i, write in enumerate(writes):
            if time.monotonic() - slice_started >= WORK_SLICE_S:
                await asyncio.sleep(0)
                slice_started = time.monotonic()
            result = self._append_one(write, acks)
            results.append(result)
            if result.ok:
                p, info = write.partition, result.info
                stored.append((i, p, info.last_offset + 1))
                messages[p] = messages.get(p, 0) + info.last_offset - info.first_offset + 1
        durable = [p for p, count in messages.items() if p.fsync_due(count)]
        waiting = set(durable)
        for p in messages:
            if p not in waiting:
                p.publish()
        return PendingWrites(self.commits, results, stored, durable, acks)

    async def append_records(self, writes: Sequence[Write], acks: int, timeout_s: float) -> list[WriteResult]:
        """append, then wait for what it must (the coordinators' one call)."""
        return await (await self.append(writes, acks)).completed(timeout_s)

    def _append_one(self, write: Write, acks: int) -> WriteResult:
        p = write.partition
        try:
            if isinstance(write, MarkerWrite):
                info = p.append_txn_marker(write.producer_id, write.producer_epoch, write.coordinator_epoch,
                                           write.commit, acks)
            else:
                if write.from_client:
                    self._claim(len(write.batch), f"{p.topic}-{p.index}")
                info, _duplicate = p.append_as_leader(write.batch, write.header, acks, write.walked,
                                                      write.coordinator, write.verified)
        except RecordsRejected as exc:  # records the topic's configs refuse, each named by its index
            return WriteResult(exc.code, str(exc), record_errors=exc.record_errors)
        except PartitionError as exc:  # not the leader; too few in-sync replicas; a transaction ended
            return WriteResult(exc.code, str(exc))
        except ProducerFenced as exc:
            return WriteResult(ErrorCode.invalid_producer_epoch, str(exc))
        except OutOfOrderSequence as exc:
            return WriteResult(ErrorCode.out_of_order_sequence_number, str(exc))
        except CoordinatorFenced as exc:
            return WriteResult(ErrorCode.transaction_coordinator_fenced, str(exc))
        except StorageError as exc:  # nothing of the write is stored (WriteRefused) or the log is offline
            self._warn("refusing a write to %s-%d: %s", p.topic, p.index, exc)
            return WriteResult(ErrorCode.kafka_storage_error, str(exc))
        return WriteResult(info=info)


class PendingWrites:
    """The appends of one `WritePath.append`, until each counts (steps 2-4)."""

    def __init__(self, commits: GroupCommits, results: list[WriteResult], stored: list[tuple[int, Partition, int]],
                 durable: list[Partition], acks: int) -> None:
        self.results = results
        self._commits = commits
        self._stored = stored
        self._durable = durable
        self._acks = acks

    @property
    def waits(self) -> bool:
        """Whether `completed` has anything to wait for (else the results are final now)."""
        return bool(self._durable) or (self._acks == -1 and any(p.high_watermark < end for _, p, end in self._stored))

    async def completed(self, timeout_s: float) -> list[WriteResult]:
        """Each result once it counts. What needs no wait is answered without giving up the event
        loop: a coordinator's next step (a transaction's Complete record after its markers)
        then follows its write at once, before a client that saw the write can ask again."""
        failed: dict[Partition, StorageError] = {}
        # The fsyncs' own futures, awaited in turn: no task or gather between the fsync's end
        # and this answer (each would be one more pass of a busy event loop).
        fsyncs = [self._commits.sync(p) for p in self._durable]
        try:
            for p, fsync in zip(self._durable, fsyncs):
                try:
                    p.publish(await fsync)
                except StorageError as exc:
                    failed[p] = exc
        except BaseException:
            for fsync in fsyncs:
                fsync.cancel()
            raise
        results = self.results
        acked = []  # acks=all: each write the HW must pass, awaited in turn against one deadline
        for i, p, end in self._stored:
            if p in failed:
                results[i] = WriteResult(ErrorCode.kafka_storage_error, str(failed[p]))
            elif self._acks == -1:
                acked.append((i, p, end))
        # In turn, not gathered: a wait the HW already passed does not suspend, and a task per
        # wait would be one more pass of the loop each; the shared deadline keeps the timeout
        # the request's, not one per partition.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        for i, p, end in acked:
            code = await p.wait_for_replication(end, max(0.0, deadline - loop.time()))
            if code is not ErrorCode.none:
                results[i] = WriteResult(code)
        return results
