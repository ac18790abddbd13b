"""The storage interface both engines implement, and nothing else leaks upward.

A `LogStore` owns one engine's files under a data directory and hands out one
`PartitionLog` per (topic, partition). The broker only ever talks to these two
classes, so `segment/kafka` (per-partition segments) and `segment/rocket`
(shared commitlog) are interchangeable per topic.

Contract shared by both engines:
- `append` takes exactly one record batch v2 that the broker has already
  validated (CRC, magic, sizes), assigns offsets by rewriting baseOffset and
  partitionLeaderEpoch in the header (outside the CRC), and writes it. Record
  bytes are never re-encoded.
- `read` returns whole batches as file regions, starting at the batch that
  contains `offset`; the broker sends them with os.sendfile.
- Indexes are derived data; the log is the truth. Opening a log after an
  unclean stop truncates a torn tail to the last valid batch and rebuilds any
  index that is behind it.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Iterator

from wire.record_batch import BatchHeader


class StorageError(Exception):
    """Base for errors the broker maps to Kafka error codes."""


class OffsetOutOfRange(StorageError):
    """Fetch offset below log start or above log end (OFFSET_OUT_OF_RANGE)."""


class LogClosed(StorageError):
    """The partition was deleted or the store closed while a request used it."""


class WriteRefused(StorageError):
    """A write found no room (ENOSPC) or failed before anything was stored: the log is as it
    was, nothing of the batch is acknowledged (KAFKA_STORAGE_ERROR), and a later write may
    succeed once space is freed."""


class LogOffline(StorageError):
    """The log can no longer vouch for its tail: an fsync failed (the page cache may have
    dropped the bytes it held, so retrying would report data durable that is not) or a failed
    write could not be undone. Every append and read fails (KAFKA_STORAGE_ERROR) until a
    restart recovers the files to their last whole batch, as Kafka takes a log dir offline."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-topic settings, named after Kafka's topic configs."""

    segment_bytes: int = 1 << 30  # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms (-1: forever)
    retention_bytes: int = -1  # retention.bytes (-1: unlimited)
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    max_message_bytes: int = 1024 * 1024 + 12  # max.message.bytes (Kafka's default)
    flush_messages: int = 0  # 0: page cache only; 1: fsync before ack (flush.messages=1)
    message_timestamp_type: str = "CreateTime"  # or LogAppendTime
    # log.segment.delete.delay.ms: a deleted file's descriptor stays open this long, so a fetch
    # already holding a region of it can still be sent; its space returns only after it
    file_delete_delay_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class FileRegion:
    """`size` bytes of an open file starting at `position`.

    `fd` stays valid until the region's log segment is deleted; a reader that
    finds it closed gets an OSError and answers the fetch with a retriable error.
    """

    fd: int
    position: int
    size: int


class PartitionLog(abc.ABC):
    """One partition's ordered, offset-addressed sequence of record batches."""

    @property
    @abc.abstractmethod
    def log_start_offset(self) -> int: ...

    @property
    @abc.abstractmethod
    def log_end_offset(self) -> int:
        """Offset the next appended record gets (Kafka's LEO)."""

    @property
    @abc.abstractmethod
    def size_in_bytes(self) -> int: ...

    @abc.abstractmethod
    def append(self, batch: bytearray, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Assign offsets to one validated batch (rewriting its header in place) and write it."""

    @abc.abstractmethod
    def read(self, offset: int, max_bytes: int, upper_bound: int) -> list[FileRegion]:
        """Whole batches from the one containing `offset`, ending before `upper_bound`.

        At least one whole batch is returned if one exists below upper_bound,
        even if it is larger than max_bytes (so a consumer always progresses).
        Raises OffsetOutOfRange if offset < log_start_offset or > log_end_offset.
        """

    @abc.abstractmethod
    def read_bytes(self, region: FileRegion) -> bytes:
        """The bytes of a region (for the few places that must look inside batches)."""

    @abc.abstractmethod
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= timestamp_ms, or None."""

    @abc.abstractmethod
    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp, or None if empty."""

    @abc.abstractmethod
    def batch_headers(self, from_offset: int = 0) -> Iterator[BatchHeader]:
        """Headers of stored batches from the one containing from_offset (for rebuilding producer state)."""

    @abc.abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after `offset` (follower truncation)."""

    @abc.abstractmethod
    def delete_records_before(self, offset: int) -> None:
        """Advance the log start offset (DeleteRecords); whole segments below it go."""

    @abc.abstractmethod
    def enforce_retention(self, now_ms: int) -> int:
        """Apply retention.ms / retention.bytes / segment.ms roll; return bytes deleted."""

    @abc.abstractmethod
    def update_config(self, config: LogConfig) -> None: ...

    @abc.abstractmethod
    def flush(self) -> None:
        """fsync everything appended so far and advance the recovery point."""

    @abc.abstractmethod
    def close(self) -> None: ...


class LogStore(abc.ABC):
    """One engine's files under a data directory."""

    @abc.abstractmethod
    def open_partition(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        """Open (recovering if needed) or create the partition's log."""

    @abc.abstractmethod
    def delete_partition(self, topic: str, partition: int) -> None:
        """Close and remove the partition's files."""

    @abc.abstractmethod
    def existing_partitions(self) -> list[tuple[str, int]]:
        """(topic, partition) pairs found on disk."""

    def commit_writes(self) -> None:
        """Write to the files (the page cache) what appends still hold in memory.

        An engine may gather the appends of one request and write them together. The broker
        calls this after every request, before answering it, and before each flush it starts,
        so an acknowledged append survives the broker process dying and a flush covers it.
        Reads see pending appends without it. Engines that write on append need nothing here.
        """

    @abc.abstractmethod
    def flush(self) -> None:
        """fsync every open partition (group commit point): what was written when it started.
        Runs in a worker thread while the event loop appends."""

    @abc.abstractmethod
    def close(self) -> None:
        """Flush, checkpoint and mark the shutdown clean."""
