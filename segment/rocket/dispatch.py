"""Dispatch: the commitlog is the truth, consume queues and the key index are built from it.

RocketMQ runs a "reput" thread that reads the commitlog behind the writer and
appends consume-queue and index entries. Here dispatch happens synchronously
inside append, in commitlog order, so a batch is visible to consumers exactly
when append returns (its queue entry exists). The same code re-dispatches units
read back from the commitlog when recovering.

Rules a unit follows when dispatched into its partition's queue:
- MESSAGE with base offset B, queue ending at N: B == N appends (the normal
  case); B < N can only follow a truncation whose marker was lost, and the log
  wins: the queue is cut to B first; B > N on a non-empty queue is a gap we log
  and accept (the queue then simply has no batch for those offsets).
- TRUNCATE(o): the queue drops every batch holding an offset >= o, exactly what
  truncate_to did before writing the marker.
- START_AT(o): the queue drops every batch and ends at o, whatever it held
  (truncate_fully_and_start_at); the next MESSAGE starts there.
- Keys of a message's records (decompressed if needed) go to the index service,
  when there is one; records that cannot be decoded are stored and served but
  not indexed.

Recovery (`recover`): with the checkpoint's commitlog offset P,
1. after an unclean stop, the index is cut back to the checkpointed position; the
   scan starts at P either way: the units before it were fsynced before the
   checkpoint was written (checkpoint.py), so a kill -9 re-reads only what was
   appended since the last checkpoint (starting at the beginning of P's 1 GiB
   file re-read up to a whole file of units that needed no check);
2. every queue drops its entries at or past P (they may be torn, or point at
   units that did not survive), and the units from P on are dispatched again as
   the scan meets them;
3. the scan stops at the first unit that does not check out (a torn tail): the
   commitlog is cut there, and if that is before P, queue entries at or past the
   cut are dropped too;
4. each queue's aborted-transaction index (segment/txn_index.py) was cut with it, and
   is cut again at its end (an entry is written when its marker is appended, which may
   be before the commitlog holds the marker); for a queue into which the scan
   dispatched a marker, the aborted transactions past its last entry are indexed again
   from the batches (txn_replay.py), which reads the queue's batch headers from its start.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable

from segment.txn_replay import aborted_from
from wire import records as wire_records
from wire.record_batch import HEADER_SIZE, BatchHeader, parse_header
from wire.record_validation import stored_batch_keys

from . import unit_format as uf
from .checkpoint import Checkpoint
from .commitlog import CommitLog
from .consume_queue import ConsumeQueue, QueueEntry
from .index_file import IndexService

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        commitlog: CommitLog,
        queues: dict[tuple[str, int], ConsumeQueue],
        index: IndexService | None,
        make_queue: Callable[[str, int], ConsumeQueue],
    ) -> None:
        self.commitlog = commitlog
        self.queues = queues
        self.index = index
        self.make_queue = make_queue
        self.dispatched = commitlog.write_pos  # every unit before this is in the queues and index
        self._replayed_markers: set[ConsumeQueue] = set()  # queues recovery dispatched a marker into

    def _queue(self, topic: str, partition: int) -> ConsumeQueue:
        q = self.queues.get((topic, partition))
        if q is None:
            q = self.queues[(topic, partition)] = self.make_queue(topic, partition)
        return q

    # ----- one unit ---------------------------------------------------------------

    def message(
        self, queue: ConsumeQueue, phys: int, unit_size: int, header: BatchHeader, batch, store_time: int,
        record_keys: set[bytes] | None = None,
    ) -> QueueEntry:
        base = header.base_offset
        if queue.last is not None:
            if base < queue.end_offset:
                log.warning(
                    "%s-%d: batch at %d below the queue end %d: cutting the queue back to it",
                    queue.topic, queue.partition, base, queue.end_offset,
                )
                queue.truncate_to_offset(base)
            elif base > queue.end_offset:
                log.warning("%s-%d: offsets %d..%d missing", queue.topic, queue.partition, queue.end_offset, base - 1)
        entry = queue.put(phys, unit_size, base, header.last_offset, header.max_timestamp)
        if self.index is not None:
            self._index_keys(queue.topic, batch, phys, store_time, record_keys)
        return entry

    def _index_keys(self, topic: str, batch, phys: int, store_time: int, keys: set[bytes] | None) -> None:
        if keys is None:  # a follower's batch or a replay: no produce check walked it before
            try:
                keys = stored_batch_keys(batch)
            except wire_records.InvalidRecords as exc:
                log.warning("not indexing the keys of the batch at commitlog %d: %s", phys, exc)
                return
        for key in keys:  # one entry per distinct key and batch: the lookup reads the whole batch anyway
            self.index.put(topic, key, phys, store_time)

    def truncation(self, queue: ConsumeQueue, offset: int) -> None:
        queue.truncate_to_offset(offset)

    def unit(self, phys: int, header: uf.UnitHeader, unit) -> None:
        """Dispatch a unit read back from the commitlog."""
        queue = self._queue(header.topic, header.partition)
        if header.magic == uf.TRUNCATE:
            self.truncation(queue, header.base_offset)
            return
        if header.magic == uf.START_AT:
            queue.start_at(header.base_offset)
            return
        batch = unit[header.header_size :]
        batch_header = parse_header(batch)
        if batch_header.is_control:
            self._replayed_markers.add(queue)
        self.message(queue, phys, header.size, batch_header, batch, header.store_time)

    # ----- recovery ---------------------------------------------------------------

    def recover(self, checkpoint: Checkpoint, abnormal: bool) -> int:
        """Re-derive queues and index from the commitlog past the checkpoint; returns the valid end."""
        started = time.monotonic()
        cl = self.commitlog
        files_end = cl.files[-1].end if cl.files else cl.write_pos
        start = min(max(checkpoint.commitlog, cl.min_offset), files_end)
        if abnormal and self.index is not None:
            self.index.recover_to(checkpoint.index_file, checkpoint.index_count)
        self._drop_from(start)
        replayed = 0
        for phys, header, unit in cl.scan(start):
            self.unit(phys, header, unit)
            replayed += 1
        end = cl.scan_end
        if end < start:
            log.warning("commitlog valid only to %d, before its checkpoint %d", end, start)
            self._drop_from(end)
        cut, owner = cl.torn_tail(end)
        if cut:
            log.warning("commitlog recovery truncated %d bytes of a torn unit (partition %s) at commitlog "
                        "offset %d; %d units re-dispatched from %d; took %.1f ms", cut, owner or "unknown",
                        end, replayed, start, (time.monotonic() - started) * 1000)
        elif replayed or end != files_end:
            log.info("commitlog recovered: %d units re-dispatched from %d, valid end %d; took %.1f ms",
                     replayed, start, end, (time.monotonic() - started) * 1000)
        cl.truncate_at(end)
        self.dispatched = end
        return end

    def _drop_from(self, phys: int) -> None:
        for q in self.queues.values():
            q.truncate_entries(q.first_phys_at_or_after(phys))

    def recover_aborted(self) -> None:
        """Step 4 of recovery, once the queues are recovered."""
        for q in self.queues.values():
            q.aborted.truncate_from(q.end_offset)
        for q in self._replayed_markers:
            index = q.aborted
            after = index.entry(len(index) - 1).last_offset + 1 if len(index) else 0
            txns = list(aborted_from(self._batches(q), after))
            for txn in txns:
                index.append(txn)
            log.info("%s-%d: %d aborted transactions indexed again after offset %d", q.topic, q.partition,
                     len(txns), after)
        self._replayed_markers.clear()

    def _batches(self, queue: ConsumeQueue):
        """(header, read the batch) of the queue's batches still in the commitlog, in offset order."""
        header_size = uf.header_size_for(queue.topic)
        floor = self.commitlog.min_offset
        for entry in queue.entries_from(queue.start_index):
            f = self.commitlog.file_at(entry.phys) if entry.phys >= floor else None
            if f is None:
                continue
            at = entry.phys - f.base + header_size
            yield (parse_header(os.pread(f.fd, HEADER_SIZE, at)),
                   lambda f=f, at=at, size=entry.size - header_size: os.pread(f.fd, size, at))
