"""Record framing checks for a producer's batch, as Kafka's LogValidator: every record read.

record_batch.validate_produced checks the 61-byte header and the CRC; a CRC only proves the
bytes are the ones the producer sent, not that they hold records. Kafka reads each record on
append (LogValidator iterating the batch, DefaultRecord.readFrom), so a batch whose records
do not parse is refused and never reaches a consumer. Before this check a CRC-valid batch
with a broken record was stored, and then confluent-kafka stopped silently at its offset and
kafka-python raised CorruptRecordError on every fetch of it.

Which error a producer gets, as Kafka's broker answers Produce v3+:

    records that do not parse, a record count the records contradict,   INVALID_RECORD
    inner offset deltas other than 0..n-1                                 (InvalidRecordException)
    compressed bytes that do not decompress                               CORRUPT_MESSAGE (Kafka: a
                                                                          KafkaException, answered
                                                                          UNKNOWN_SERVER_ERROR)
    records that decompress to more than max_uncompressed_bytes           MESSAGE_TOO_LARGE (the
                                                                          Java producer splits the
                                                                          batch and retries)

The walk itself is wire/record_walk.py, or its compiled twin wire/_record_walk.pyx when the
extension was built; RECORD_WALK_COMPILED says which one runs. Its RecordSummary (timestamp
range, keyless count) goes with the batch to the topic's per-record rules
(replica/record_checks.py), so they never walk the records again.
"""

from __future__ import annotations

from typing import NamedTuple

from . import records as wire_records
from . import record_walk
from .record_walk import RecordSummary
from .record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC, BatchHeader, BatchTooLarge, InvalidBatch, InvalidRecord, \
    parse_header

try:
    from ._record_walk import walk_records
    RECORD_WALK_COMPILED = True
except ImportError:  # not built (a source checkout without a compiler): the same walk, slower
    walk_records = record_walk.walk_records
    RECORD_WALK_COMPILED = False

# cramjam's codecs hold the GIL while they inflate (~1.3 ms per MB here), so even in a worker
# thread one batch stalls the event loop that long: 16 MiB bounds it near 25 ms, and is 16x the
# ~1 MiB batches producers build. A batch past it gets MESSAGE_TOO_LARGE, which makes the Java
# producer split it.
DEFAULT_MAX_UNCOMPRESSED_BYTES = 16 << 20


class RecordsTooLarge(BatchTooLarge):
    """The records decompress to more than the limit (Kafka's nearest: MESSAGE_TOO_LARGE)."""


class CheckedRecords(NamedTuple):
    walked: RecordSummary  # the keys when asked for, the timestamp range, the keyless count
    uncompressed_bytes: int  # bytes of records the check decompressed (0 for an uncompressed batch)
    records: memoryview  # the records region, uncompressed (wire/recompression.py takes it from here)


def check_records(batch, header: BatchHeader, want_keys: bool = False,
                  max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES) -> CheckedRecords:
    """Walk every record of one batch that validate_produced accepted (so its header, size and
    CRC are sound). Raises InvalidRecord, InvalidBatch or RecordsTooLarge as tabled above."""
    codec = header.compression
    if codec == 0:
        return CheckedRecords(walk_records(batch, HEADER_SIZE, header.size, header.record_count, want_keys), 0,
                              memoryview(batch)[HEADER_SIZE : header.size])
    payload = memoryview(batch)[HEADER_SIZE : header.size]
    try:
        data = wire_records.decompress_records(codec, payload, max_uncompressed_bytes)  # no copy: 16 MiB
        # of memcpy would hold the GIL too
    except wire_records.RecordsTooLarge as exc:
        raise RecordsTooLarge(str(exc)) from None
    except wire_records.InvalidRecords as exc:
        raise InvalidBatch(str(exc)) from None
    return CheckedRecords(walk_records(data, 0, len(data), header.record_count, want_keys), len(data), data)


def stored_batch_keys(batch) -> set[bytes]:
    """The distinct non-null keys of a batch already stored by a leader (a follower's append,
    the commitlog's key index): the compiled walk for an uncompressed batch whose records
    are framed as a producer's (offset deltas 0..n-1), records.record_keys for any other.
    A follower's commitlog walked every record of every fetched batch in Python, ~17% of its
    busy time at 1 KB records; a leader had the keys from its produce check for free.
    Raises records.InvalidRecords as record_keys does."""
    if RECORD_WALK_COMPILED and len(batch) >= HEADER_SIZE:
        header = parse_header(batch)
        if header.magic != MAGIC or header.compression != 0 or header.record_count < 0 \
                or header.batch_length < HEADER_SIZE - LOG_OVERHEAD or header.size > len(batch):
            return wire_records.record_keys(batch)  # it names what is wrong
        try:
            keys = walk_records(batch, HEADER_SIZE, header.size, header.record_count, True).keys
            assert keys is not None  # asked for
            return keys
        except InvalidRecord:  # a compacted batch (offset gaps) or a broken one: the lenient walk says
            pass
    return wire_records.record_keys(batch)
