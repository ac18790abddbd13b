"""What compaction keeps and when a log is due for it: Kafka's rules, free of any file layout.

A compacted log is cut in three at every round (Kafka's LogCleanerManager):

    log start ........ first dirty ..................... first uncleanable ....... end
    |  clean: cleaned before  |  dirty: not cleaned yet   |  never cleaned now      |
                                                            the active segment,
                                                            segments newer than
                                                            min.compaction.lag.ms, and
                                                            what the last stable offset
                                                            has not passed

- A round reads the dirty part into an OffsetMap, then rewrites everything from the log start
  to the end the map covers: a record survives when no later record of its key was seen, it
  has a key, and it is not a tombstone whose segment is past delete.retention.ms.
- A log is due when its dirty bytes are at least min.cleanable.dirty.ratio of its cleanable
  bytes, or when its oldest dirty record is older than max.compaction.lag.ms.
- The last batch of each idempotent producer is kept, emptied if need be, so the producer
  state rebuilt from the log (its last sequence and offset) is what it was.
- Retention by time and size applies only when the policy names "delete".
- Transactions (txn_cleaning.py, as Kafka's Cleaner): nothing from the last stable offset on is
  cleaned, since an open transaction may still abort, and the records of aborted transactions
  supersede nothing and go. Otherwise an aborted record would take the place of the one its key
  had before, which compacted `__consumer_offsets` showed by losing committed offsets under
  aborted TxnOffsetCommits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wire.record_batch import BatchHeader
from wire.records import Record

from .offset_map import OffsetMap


@dataclass
class CleanStats:
    """What one round of either engine's cleaner did (the service logs it)."""
    bytes_read: int = 0
    bytes_written: int = 0
    records_dropped: int = 0
    groups_swapped: int = 0
    end_offset: int | None = None  # where this round's clean stopped: the next round's first dirty


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """What the rules need of one segment (or of one stretch of a commitlog partition)."""

    base_offset: int
    next_offset: int  # offset after its last batch
    size: int  # bytes
    first_timestamp: int  # maxTimestamp of its first batch (-1: none), Kafka's segment "earliest" time
    max_timestamp: int  # largest timestamp in it (-1: none)


def compacts(cleanup_policy: str) -> bool:
    return "compact" in cleanup_policy.split(",")


def retention_deletes(cleanup_policy: str) -> bool:
    """Time and size retention apply to `delete` and `compact,delete`; never to `compact` alone,
    whose every key's latest value must stay however old it is."""
    return "delete" in cleanup_policy.split(",")


def first_uncleanable_offset(closed: Sequence[SegmentStats], active_base: int, now_ms: int,
                             min_compaction_lag_ms: int, last_stable_offset: int) -> int:
    """Where cleaning must stop: the active segment's base, the last stable offset (an open
    transaction may yet abort), or the first closed segment holding a record newer than
    min.compaction.lag.ms (a segment with no timestamp counts as old)."""
    for seg in closed:
        if seg.base_offset >= last_stable_offset:
            break
        if min_compaction_lag_ms > 0 and seg.max_timestamp > now_ms - min_compaction_lag_ms:
            return seg.base_offset
    return min(active_base, last_stable_offset)


def dirty_bytes(closed: Sequence[SegmentStats], first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """(clean bytes, dirty bytes) of the closed segments below `uncleanable`."""
    clean = dirty = 0
    for seg in closed:
        if seg.base_offset >= uncleanable:
            break
        if seg.next_offset <= first_dirty:
            clean += seg.size
        else:
            dirty += seg.size
    return clean, dirty


def is_due(closed: Sequence[SegmentStats], first_dirty: int, uncleanable: int, now_ms: int,
           min_cleanable_dirty_ratio: float, max_compaction_lag_ms: int) -> bool:
    """Whether a round should clean this log now (LogCleanerManager.grabFilthiestCompactedLog)."""
    if first_dirty >= uncleanable:  # also when `uncleanable` (a last stable offset) is inside a segment
        return False
    clean, dirty = dirty_bytes(closed, first_dirty, uncleanable)
    if dirty == 0:
        return False
    if dirty / (clean + dirty) >= min_cleanable_dirty_ratio:
        return True
    oldest_dirty = next((s.first_timestamp for s in closed if s.next_offset > first_dirty), -1)
    return 0 <= oldest_dirty and max_compaction_lag_ms < now_ms - oldest_dirty


def tombstones_expired(segment_max_timestamp: int, now_ms: int, delete_retention_ms: int) -> bool:
    """Whether the tombstones of a segment may go: its newest record is older than
    delete.retention.ms, so a consumer reading from the start has had that long to see them
    (Kafka measured the same from the segment's last modification)."""
    return segment_max_timestamp < now_ms - delete_retention_ms


def record_survives(record: Record, offsets: OffsetMap, *, end: int, drop_tombstones: bool) -> bool:
    """Whether a record stays (Cleaner.shouldRetainRecord). A record at or past the round's
    `end` (what the map covers, never past the first uncleanable offset) stays whatever it is:
    the segment holding `end` is rewritten whole, and past it lies what the round must not
    clean yet, such as a transaction still open at the last stable offset (dropping its
    tombstone would move where producer state rebuilt from the log finds it begins). Below
    `end`, keyless records go (a compacted topic refuses them at produce; older ones are
    dropped as Kafka does), a record a later one of its key supersedes goes, and so does an
    expired tombstone."""
    if record.offset >= end:
        return True
    if record.key is None:
        return False
    latest = offsets.latest(record.key)
    if latest is not None and latest > record.offset:
        return False
    return not (record.value is None and drop_tombstones)


def last_batches_of_producers(headers: Iterable[BatchHeader]) -> set[int]:
    """Base offsets of the last batch of each producer id among `headers` (the whole log, in
    offset order): those batches are kept, emptied if every record goes, so producer state
    rebuilt from the log keeps each producer's last sequence and epoch."""
    last: dict[int, int] = {}
    for header in headers:
        if header.has_producer_id:
            last[header.producer_id] = header.base_offset
    return set(last.values())
