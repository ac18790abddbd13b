"""The segment layout's aborted transactions: one `.txnindex` per segment (segment/txn_index.py).

A segment's index holds the transactions whose ABORT marker is in that segment. A read asks
the segment holding its start offset and those after it, until one answers that no later
segment can hold a transaction overlapping the read (the entries' last stable offset, as
Kafka's collectAbortedTransactions stops).

After an unclean stop, the part recovered by a scan (from the last index entry below the
recovery point on) may have lost entries its markers kept, or kept entries of markers the cut
took: its entries are dropped and, if it holds any marker, rebuilt by a replay of the log from
its start (txn_replay.py: an entry needs the transactions open before the scan began). A clean
start, or a scanned part without markers, replays nothing.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_right

from segment.txn_index import AbortedTxn
from segment.txn_replay import aborted_from
from wire.control_batch import is_marker

from .log_segment import LogSegment

log = logging.getLogger(__name__)


def collect_aborted(segments: list[LogSegment], start: int, upper: int) -> list[AbortedTxn]:
    """The aborted transactions overlapping [start, upper) among `segments` (in offset order)."""
    found: list[AbortedTxn] = []
    first = max(bisect_right([s.base_offset for s in segments], start) - 1, 0)
    for seg in segments[first:]:
        txns, complete = seg.txn_index.collect(start, upper)
        found += txns
        if complete:
            break
    return found


def rebuild_txn_indexes(plog, scanned: list[LogSegment]) -> None:
    """Rebuild the `.txnindex` entries of the scanned part of `plog` (a SegmentPartitionLog being
    opened): from where the first scanned segment's scan began, all of the later ones'. The
    entries below it were fsynced with the batches the recovery point covers, all but possibly
    the one of a marker that ended the last flush (written just after it): that marker's batch
    lies at or past the scan's start, so it is rebuilt here."""
    if not scanned:
        return
    start = scanned[0].scanned_from
    for seg in scanned:
        seg.txn_index.truncate_from(start)
    if not any(is_marker(h) for h in plog.batch_headers(start)):
        return
    started = time.monotonic()
    bases = [s.base_offset for s in plog.segments]
    count = 0
    for txn in aborted_from(plog.batches_to_replay(plog.log_start_offset), start):
        plog.segments[bisect_right(bases, txn.last_offset) - 1].txn_index.append(txn)
        count += 1
    log.info("%s: aborted-transaction index rebuilt from offset %d: %d entries; took %.1f ms",
             plog.dir.name, start, count, (time.monotonic() - started) * 1000)
