"""What a handler may call on a hosted partition, and how far a read may go.

Two things answer to it: `replica.Partition` (a log and every replication decision about it)
and read-only views of one, such as a key-lookup topic's partition (broker/key_topic.py), which
serve another partition's records and own no log. `read_only` tells them apart: produce,
DeleteRecords and OffsetForLeaderEpoch are for a Partition only, and refuse a view.

How far a read goes is Kafka's FetchIsolation, decided once per request from who asks:

    FetchIsolation   who                                      reads below
    LOG_END          a follower (replica id >= 0)             the log end offset
    HIGH_WATERMARK   a consumer, read_uncommitted             the high watermark
    TXN_COMMITTED    a consumer, read_committed               the last stable offset

A follower copies the leader's whole log (its fetch offset is what moves the high watermark); a
consumer sees only what every in-sync replica holds, and read_committed only what no open
transaction may still abort. Kafka's debugging consumer (replica id -2) is a consumer here.
"""

from __future__ import annotations

import asyncio
import enum
from typing import TYPE_CHECKING, Protocol

from .producer_state import ActiveProducer

if TYPE_CHECKING:  # the settings table imports this module, and a twinlog command must not load
    # the codec's Hypothesis strategies (broker/cli/main.py)
    from wire.error_codes import ErrorCode

# ListOffsets' timestamps that name a position rather than a time (Kafka's ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1  # the timestamp answered with a position found without one

READ_COMMITTED = 1  # the isolation_level of Fetch v4+ and ListOffsets v2+ (0: read_uncommitted)


class FetchIsolation(enum.Enum):
    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"

    @classmethod
    def of(cls, replica_id: int, isolation_level: int) -> FetchIsolation:
        """Kafka's FetchIsolation.of: a broker's replica id reads the whole log, a consumer up
        to what its isolation level may see."""
        if replica_id >= 0:
            return cls.LOG_END
        return cls.TXN_COMMITTED if isolation_level == READ_COMMITTED else cls.HIGH_WATERMARK


class ReadablePartition(Protocol):
    """The calls every hosted partition answers (replica.Partition, and its read-only views)."""

    topic: str
    index: int
    read_only: bool  # True: a view, which refuses produce, DeleteRecords and OffsetForLeaderEpoch

    @property
    def is_leader(self) -> bool: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    def aborted_transactions(self, start: int, upper: int) -> list:
        """Aborted transactions (producer_id, first_offset, ...) overlapping [start, upper), which a
        read_committed consumer filters out of what it read."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        """A client's current_leader_epoch checked against this partition's (None: it may ask)."""

    def read(self, offset: int, max_bytes: int, isolation: FetchIsolation) -> list:
        """Whole record batches from the one holding `offset`, as file regions or bytes, none at
        or past what `isolation` may see; at least one batch if there is one, even beyond
        max_bytes. Raises segment.log.OffsetOutOfRange outside the log, StorageError offline."""

    def fetch_offset_for_timestamp(self, timestamp: int, isolation: FetchIsolation) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) of a position (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP,
        MAX_TIMESTAMP) or of the first record at or after `timestamp`; None when there is no
        such record that `isolation` may see."""

    def follower_fetched(self, replica_id: int, fetch_offset: int) -> None:
        """A follower's Fetch reached `fetch_offset` (a view has no followers of its own)."""

    def add_waiter(self, fut: asyncio.Future, reads_to_log_end: bool = False) -> None:
        """Complete `fut` when records arrive (a fetch's long poll); `reads_to_log_end`: a
        follower's, which a high watermark move alone does not wake."""

    def discard_waiter(self, fut: asyncio.Future) -> None: ...

    def active_producers(self) -> list[ActiveProducer]:
        """The producers it remembers (DescribeProducers); a view has none of its own."""
