"""Control batches: the COMMIT / ABORT markers that end a producer's transaction in a partition.

A control batch is a record batch v2 (record_batch.py) with attributes bits 4 (transactional)
and 5 (control) set, the producer's id and epoch, base sequence -1, and one record whose key
and value are Kafka's ControlRecordType and EndTransactionMarker:

    key    int16  version (0)
           int16  type    (0 ABORT, 1 COMMIT)
    value  int16  version (0)
           int32  coordinatorEpoch

Only the transaction coordinator's WriteTxnMarkers puts one in a log; clients never may
(record_batch.validate_produced refuses them). A marker takes an offset like any record, so
consumers see a gap where it stands.
"""

from __future__ import annotations

import functools
import struct

from .batch_builder import _batch, _record
from .record_batch import CONTROL_BIT, TRANSACTIONAL_BIT, BatchHeader
from .records import iter_records

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def build_control_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                        timestamp_ms: int) -> bytearray:
    """One marker to append (base offset 0: the log assigns it), a copy of its own that the log
    may rewrite in place."""
    return bytearray(_control_batch(producer_id, producer_epoch, coordinator_epoch, commit, timestamp_ms))


# A transaction's markers to its many partitions are the same bytes but for the base offset and
# leader epoch the log writes, which lie outside the CRC: built once per marker and millisecond
# (the build was a fifth of a marker's append at 64 partitions per transaction).
@functools.lru_cache(maxsize=1)
def _control_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                   timestamp_ms: int) -> bytes:
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    payload = _record(0, 0, key, value)
    return bytes(_batch(0, payload, 1, 0, timestamp_ms, timestamp_ms,
                        attributes=TRANSACTIONAL_BIT | CONTROL_BIT, producer=(producer_id, producer_epoch, -1)))


def _marker_record(batch):
    record = next(iter_records(batch), None)
    if record is None or record.key is None or len(record.key) < _KEY.size:
        raise ValueError("a control batch without a control record key")
    return record


def control_type(batch) -> int:
    """ABORT or COMMIT, from the first record of the control batch at the start of `batch`.
    Raises ValueError for a record that is not a transaction marker."""
    _version, kind = _KEY.unpack_from(_marker_record(batch).key)
    if kind not in (ABORT, COMMIT):
        raise ValueError(f"control record type {kind} is not a transaction marker")
    return kind


def marker_coordinator_epoch(batch) -> int:
    """The coordinator epoch a marker carries (-1 when its value is missing)."""
    value = _marker_record(batch).value
    return _VALUE.unpack_from(value)[1] if value is not None and len(value) >= _VALUE.size else -1


def is_marker(header: BatchHeader) -> bool:
    return header.is_control and header.is_transactional
