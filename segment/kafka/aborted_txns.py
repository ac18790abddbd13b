"""The segment layout's aborted transactions: one `.txnindex` per segment (segment/txn_index.py).

A segment's index holds the transactions whose ABORT marker is in that segment. A read asks
the segment holding its start offset and those after it, until one answers that no later
segment can hold a transaction overlapping the read (the entries' last stable offset, as
Kafka's collectAbortedTransactions stops).

After an unclean stop, the segments recovered by a scan (those past the recovery point) may
have lost entries their markers kept, or kept entries of markers the cut took: their indexes
are emptied and, if the scanned part holds any marker, rebuilt by a replay of the log from its
start (txn_replay.py: an entry needs the transactions open before its segment began). A clean
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
    """Rebuild the `.txnindex` of the scanned segments of `plog` (a SegmentPartitionLog being opened)."""
    for seg in scanned:
        seg.txn_index.reset()
    if not any(is_marker(h) for seg in scanned for _pos, h in seg.headers_from(0)):
        return
    started = time.monotonic()
    bases = [s.base_offset for s in plog.segments]
    count = 0
    for txn in aborted_from(plog.batches_to_replay(plog.log_start_offset), scanned[0].base_offset):
        plog.segments[bisect_right(bases, txn.last_offset) - 1].txn_index.append(txn)
        count += 1
    log.info("%s: aborted-transaction index rebuilt from offset %d: %d entries; took %.1f ms",
             plog.dir.name, scanned[0].base_offset, count, (time.monotonic() - started) * 1000)
