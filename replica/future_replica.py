"""A partition's future replica: a copy of its log being built in another log dir (Kafka's
future log, filled by ReplicaAlterLogDirsThread), until it replaces the current log.

It is filled the way a follower's log is: each batch exactly as the current log stored it
(offsets, leader epoch, producer ids, sequences, markers), appended with the follower's append
and never re-encoded. It keeps a producer-state table of its own only to index the aborted
transactions its copied markers close, as a follower does; the partition's own table stays the
one producers are checked against, and after the swap it describes the new log as well.

Reading the current log's bytes (`fetch`) is pure pread, safe in a worker thread; `append`
writes into the target engine and runs on the event loop, where that engine is used.
"""

from __future__ import annotations

from segment.log import FileRegion, PartitionLog
from wire.record_batch import HEADER_SIZE, parse_header

from .producer_state import ProducerStateTable


class FutureReplica:
    def __init__(self, log: PartitionLog, target_mode: str) -> None:
        self.log = log
        self.target_mode = target_mode
        self._producers = ProducerStateTable()
        self._fresh = True  # nothing copied yet: where the copy starts is decided at the first read

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def regions_behind(self, current: PartitionLog, max_bytes: int) -> list[FileRegion]:
        """On the loop: where the current log's batches past ours lie (up to `max_bytes`, at
        least one batch)."""
        if self._fresh or self.log.log_end_offset < current.log_start_offset:
            self._start_at(current)
        if self.log.log_end_offset >= current.log_end_offset:
            return []
        return current.read(self.log.log_end_offset, max_bytes, current.log_end_offset)

    def _start_at(self, current: PartitionLog) -> None:
        """Start (again) where the current log's first batch does, which may lie before its log
        start (DeleteRecords inside a batch; `align` moves ours there at the swap)."""
        first = current.read(current.log_start_offset, 1, current.log_end_offset)
        start = parse_header(current.read_bytes(first[0])[:HEADER_SIZE]).base_offset if first \
            else current.log_start_offset
        if (self.log.log_start_offset, self.log.log_end_offset) != (start, start):
            self.log.truncate_fully_and_start_at(start)
        self._producers = ProducerStateTable()
        self._fresh = False

    def restart(self) -> None:
        """The current log was truncated under the copy: copy it again from its start."""
        self._fresh = True

    @staticmethod
    def fetch(current, regions: list[FileRegion]) -> bytes:
        """The regions' bytes, read through `current` (the log or its Partition: anything with
        read_bytes; pread, safe in a worker thread)."""
        return b"".join(current.read_bytes(r) for r in regions)

    def append(self, data: bytes) -> int:
        """On the loop: append the whole batches in `data` that continue this log (those it
        already holds are skipped: the current log may have grown past a read); returns how
        many bytes were stored."""
        pos, stored = 0, 0
        view = memoryview(data)
        while pos < len(data):
            header = parse_header(view[pos:pos + HEADER_SIZE])
            batch = bytes(view[pos:pos + header.size])
            pos += header.size
            if header.last_offset < self.log.log_end_offset:
                continue
            info = self.log.append_as_follower(batch)
            aborted = self._producers.record_stored(header, info.first_offset, info.last_offset,
                                                    info.max_timestamp, batch)
            if aborted is not None:
                self.log.append_aborted_txn(aborted)
            stored += header.size
        return stored

    def catch_up(self, current: PartitionLog) -> None:
        """On the loop, all at once: copy every batch the current log holds past ours (its
        store's appends written first: a read of the commitlog sees only written units)."""
        while regions := self.regions_behind(current, 1 << 20):
            self.append(self.fetch(current, regions))

    def align(self, current: PartitionLog) -> None:
        """Before the swap: the current log's start and its leader epochs with no batch yet (a
        new leader's epoch starts at its LEO before its first batch)."""
        if current.log_start_offset > self.log.log_start_offset:
            self.log.delete_records_before(current.log_start_offset)
        for entry in current.epochs.entries:
            self.log.epochs.assign_if_newer(entry.epoch, entry.start_offset)
