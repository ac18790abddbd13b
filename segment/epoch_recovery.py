"""Opening a log: make its leader-epoch cache agree with the batches the log actually holds.

Both engines call `recover_epoch_cache` once their own recovery has settled the log's bounds
(torn tail cut, log start known). The cache file is written before the batches of a new
epoch and after a truncation is durable (leader_epoch_cache.py), so what it may hold beyond
the truth is entries at or past the log end: the first entry moves up to the log start and
then every entry at or past the log end goes, as Kafka's truncateFromEnd(logEndOffset) at
load (a log emptied by DeleteRecords or retention so loses its last epoch, as in Kafka: a
follower asking for it gets (-1, -1) and falls back to the high watermark).

Then every remaining entry is checked against the batch it names (one header read each, so a
few per partition):
- the batch holding its start offset carries that partitionLeaderEpoch and begins there (the
  first entry may start inside a batch, where DeleteRecords put the log start);
- the batch at the log start is covered by an entry (a crash can lose a DeleteRecords whose
  log start was not checkpointed yet, bringing older batches back);
- the last batch of the log carries the latest epoch.
A disagreement (a file from a crash the write order above does not cover, or one copied from
elsewhere) and a missing or malformed file are answered the same way: the cache is rebuilt
from every batch's header from the log start, keeping each epoch's first batch, Kafka's rule
when it re-reads segments.
"""

from __future__ import annotations

import logging

from segment.leader_epoch_cache import EpochEntry, LeaderEpochCache, cut_from_end, cut_from_start
from segment.log import PartitionLog

log = logging.getLogger(__name__)


def recover_epoch_cache(cache: LeaderEpochCache, plog: PartitionLog) -> None:
    start, end = plog.log_start_offset, plog.log_end_offset
    entries = None
    if cache.loaded:
        entries = cut_from_end(cut_from_start(cache.entries, start), end)
        problem = _disagreement(entries, plog, start, end)
        if problem is not None:
            log.warning("%s: %s: rebuilding the leader-epoch cache from the batches", cache.path, problem)
            entries = None
        elif entries != cache.entries:
            log.info("%s: trimmed to the log [%d, %d): %s -> %s", cache.path, start, end, cache.entries, entries)
    if entries is None:
        if not cache.loaded and start == end:
            return  # nothing to rebuild from, nothing to write
        entries = _rebuild(plog, start)
    cache.replace(entries)


def _first_header(plog: PartitionLog, offset: int):
    return next(iter(plog.batch_headers(offset)), None)


def _disagreement(entries: list[EpochEntry], plog: PartitionLog, start: int, end: int) -> str | None:
    """Why `entries` cannot describe the log's batches, or None if they can."""
    for i, e in enumerate(entries):
        header = _first_header(plog, e.start_offset)
        if header is None or header.base_offset > e.start_offset:
            return f"no batch holds offset {e.start_offset} of epoch {e.epoch}"
        if header.partition_leader_epoch != e.epoch:
            return (f"the batch at {header.base_offset} has epoch {header.partition_leader_epoch}, "
                    f"the cache says {e.epoch}")
        if header.base_offset != e.start_offset and i > 0:  # the first may start at a log start inside a batch
            return f"epoch {e.epoch} starts at {e.start_offset}, inside the batch at {header.base_offset}"
    if end > start and (not entries or entries[0].start_offset > start):
        first = _first_header(plog, start)
        if first is not None and first.partition_leader_epoch >= 0:
            return f"the batches from the log start {start} to the first cached epoch have none"
    if end > start:
        last = _first_header(plog, end - 1)
        if last is not None and last.partition_leader_epoch >= 0:
            latest = entries[-1].epoch if entries else -1
            if last.partition_leader_epoch != latest:
                return f"the last batch has epoch {last.partition_leader_epoch}, the cache ends with {latest}"
    return None


def _rebuild(plog: PartitionLog, start: int) -> list[EpochEntry]:
    entries: list[EpochEntry] = []
    for header in plog.batch_headers(start):
        epoch = header.partition_leader_epoch
        if epoch >= 0 and (not entries or epoch > entries[-1].epoch):
            entries.append(EpochEntry(epoch, max(header.base_offset, start)))
    return entries
