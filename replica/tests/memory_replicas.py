"""In-memory replicas for the fetcher's tests: a leader that answers like a Kafka leader, and a
follower log with the interface replica.fetcher.FollowerPartition names.

Both hold real record batches v2 (built with wire.batch_builder, partitionLeaderEpoch stamped
outside the CRC, as a leader stores them), so "the follower equals the leader" is a byte
comparison. Their epoch caches follow Kafka's LeaderEpochFileCache: a list of (epoch, start
offset); a leader's gains an entry when it takes an epoch, a follower's when a batch of a new
epoch is appended.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from replica.leader_endpoint import (
    NO_EPOCH,
    NO_OFFSET,
    EpochEndOffset,
    EpochQuery,
    FetchPartition,
    FetchResult,
    TopicPartition,
)
from wire.batch_builder import build_record_batch
from wire.error_codes import ErrorCode
from wire.record_batch import assign_offsets, parse_header

TP = TopicPartition("t", 0)


def make_batch(base_offset: int, epoch: int, records: int = 1, tag: bytes = b"") -> bytes:
    """A stored batch of `records` records at base_offset, stamped with `epoch`; `tag` makes
    batches at the same offsets differ in their bytes (different leaders wrote them)."""
    rows = [(base_offset + i, 1_700_000_000_000 + i, None, tag + b"%d" % (base_offset + i), ())
            for i in range(records)]
    batch = build_record_batch(base_offset, base_offset + records - 1, rows)
    assign_offsets(batch, base_offset, epoch)
    return bytes(batch)


def end_offset_for(epochs: list[tuple[int, int]], requested: int, log_end_offset: int) -> tuple[int, int]:
    """Kafka's LeaderEpochFileCache.endOffsetFor over [(epoch, start offset)], ascending."""
    if requested == NO_EPOCH or not epochs:
        return NO_EPOCH, NO_OFFSET
    if epochs[-1][0] == requested:
        return requested, log_end_offset
    higher = [(e, s) for e, s in epochs if e > requested]
    if not higher:
        return NO_EPOCH, NO_OFFSET
    floor = [e for e, _ in epochs if e <= requested]
    return (floor[-1] if floor else requested), higher[0][1]


@dataclass
class MemoryLog:
    """A partition's batches, whole; the base of every batch is the end of the one before."""

    batches: list[bytes] = field(default_factory=list)
    start: int = 0  # log start offset

    @property
    def end(self) -> int:
        if not self.batches:
            return self.start
        return parse_header(self.batches[-1]).last_offset + 1

    def append(self, batch: bytes) -> None:
        header = parse_header(batch)
        if header.base_offset != self.end:
            raise ValueError(f"batch at {header.base_offset} does not start at the log end {self.end}")
        self.batches.append(batch)

    def truncate_to(self, offset: int) -> None:
        """Kafka's: the batch holding `offset` goes too, so the end may land below `offset`."""
        self.batches = [b for b in self.batches if parse_header(b).last_offset < offset]

    def epochs_from_batches(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for b in self.batches:
            h = parse_header(b)
            if h.partition_leader_epoch >= 0 and (not out or h.partition_leader_epoch > out[-1][0]):
                out.append((h.partition_leader_epoch, h.base_offset))
        return out

    def as_bytes(self) -> bytes:
        return b"".join(self.batches)


class MemoryFollower:
    """A follower's partition as the fetcher sees it."""

    def __init__(self, batches: list[bytes] = (), high_watermark: int = 0, fsync_before_report: bool = False) -> None:
        self.log = MemoryLog(list(batches))
        self.high_watermark = high_watermark
        self.truncations: list[int] = []
        self.generation = 0  # bumped by every truncation, as partition.py
        self.fsync_before_report = fsync_before_report
        self.flushed_end = self.log.start  # nothing is known fsynced at open, as partition.py

    def flushed(self, upto: int, generation: int) -> None:
        if generation == self.generation:
            self.flushed_end = max(self.flushed_end, min(upto, self.log.end))

    @property
    def log_start_offset(self) -> int:
        return self.log.start

    @property
    def log_end_offset(self) -> int:
        return self.log.end

    def latest_epoch(self) -> int:
        epochs = self.log.epochs_from_batches()
        return epochs[-1][0] if epochs else NO_EPOCH

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        return end_offset_for(self.log.epochs_from_batches(), epoch, self.log.end)

    def append_as_follower(self, batch: bytes) -> None:
        self.log.append(batch)

    def truncate_to(self, offset: int) -> None:
        self.truncations.append(offset)
        self.generation += 1
        self.log.truncate_to(offset)
        self.flushed_end = min(self.flushed_end, self.log.end)
        self.high_watermark = min(self.high_watermark, self.log.end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.log = MemoryLog([], offset)
        self.generation += 1
        self.flushed_end = offset
        self.high_watermark = offset

    def update_follower_high_watermark(self, high_watermark: int) -> None:
        self.high_watermark = high_watermark  # uncapped, so a test sees what the fetcher passes


@dataclass
class LeaderReplica:
    """The leader's partition: its log, its epoch cache and what it answers."""

    leader_epoch: int = 0
    log: MemoryLog = field(default_factory=MemoryLog)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    high_watermark: int = 0
    error: ErrorCode = ErrorCode.none  # answer every request with this error instead (not_leader_or_follower, ...)

    def become_leader(self, epoch: int) -> None:
        """Kafka's makeLeader: the new epoch starts at the current log end."""
        self.leader_epoch = epoch
        if not self.epochs or self.epochs[-1][0] < epoch:
            self.epochs.append((epoch, self.log.end))

    def append(self, records: int = 1, tag: bytes = b"L") -> bytes:
        batch = make_batch(self.log.end, self.leader_epoch, records, tag)
        self.log.append(batch)
        if not self.epochs or self.epochs[-1][0] < self.leader_epoch:
            self.epochs.append((self.leader_epoch, parse_header(batch).base_offset))
        return batch

    def fence(self, current_leader_epoch: int) -> ErrorCode:
        if self.error is not ErrorCode.none:
            return self.error
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.unknown_leader_epoch
        if 0 <= current_leader_epoch < self.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        return ErrorCode.none


class MemoryLeader:
    """A LeaderEndpoint over LeaderReplicas, answering as Kafka's leader does.

    A fetch reads from the batch holding the fetch offset, whole batches up to
    partition_max_bytes (the first one whole even if larger); with partial_tails the next
    batch's first bytes fill what is left, as a Kafka leader cuts a response at its limit.
    With follower_in_isr the leader's high watermark follows the follower's fetch offset. An
    answer without records waits empty_wait_s, Kafka's max_wait_ms long poll.
    """

    def __init__(self, partition_max_bytes: int = 1 << 20, partial_tails: bool = False,
                 follower_in_isr: bool = True, empty_wait_s: float = 0.0) -> None:
        self.replicas: dict[TopicPartition, LeaderReplica] = {}
        self.partition_max_bytes = partition_max_bytes
        self.partial_tails = partial_tails
        self.follower_in_isr = follower_in_isr
        self.empty_wait_s = empty_wait_s
        self.reachable = True
        self.requests: list[tuple[str, list]] = []

    async def fetch(self, partitions: list[FetchPartition]) -> dict[TopicPartition, FetchResult]:
        self._check_reachable("fetch", partitions)
        answer = {p.tp: self._fetch_one(p) for p in partitions}
        if not any(r.records for r in answer.values()):
            await asyncio.sleep(self.empty_wait_s)  # a Kafka leader holds an empty answer max_wait_ms
        return answer

    def _fetch_one(self, p: FetchPartition) -> FetchResult:
        replica = self.replicas.get(p.tp)
        if replica is None:
            return FetchResult(ErrorCode.unknown_topic_or_partition, -1, -1, b"")
        error = replica.fence(p.current_leader_epoch)
        log = replica.log
        if error is ErrorCode.none and not log.start <= p.fetch_offset <= log.end:
            error = ErrorCode.offset_out_of_range
        if error is not ErrorCode.none:
            return FetchResult(error, replica.high_watermark, log.start, b"")
        if self.follower_in_isr:
            replica.high_watermark = max(replica.high_watermark, min(p.fetch_offset, log.end))
        out = bytearray()
        for batch in log.batches:
            if parse_header(batch).last_offset < p.fetch_offset:
                continue
            room = self.partition_max_bytes - len(out)
            if out and len(batch) > room:
                if self.partial_tails:
                    out += batch[:room]
                break
            out += batch
        return FetchResult(ErrorCode.none, replica.high_watermark, log.start, bytes(out))

    async def offset_for_leader_epoch(self, queries: list[EpochQuery]) -> dict[TopicPartition, EpochEndOffset]:
        self._check_reachable("offset_for_leader_epoch", queries)
        out = {}
        for q in queries:
            replica = self.replicas.get(q.tp)
            if replica is None:
                out[q.tp] = EpochEndOffset(ErrorCode.unknown_topic_or_partition, NO_EPOCH, NO_OFFSET)
                continue
            error = replica.fence(q.current_leader_epoch)
            if error is not ErrorCode.none:
                out[q.tp] = EpochEndOffset(error, NO_EPOCH, NO_OFFSET)
                continue
            epoch, end = end_offset_for(replica.epochs, q.leader_epoch, replica.log.end)
            out[q.tp] = EpochEndOffset(ErrorCode.none, epoch, end)
        return out

    def _check_reachable(self, name: str, items: list) -> None:
        if not self.reachable:
            raise ConnectionRefusedError(f"{name}: leader unreachable")
        self.requests.append((name, items))

    async def close(self) -> None:
        self.reachable = False
