"""The per-record checks Kafka's LogValidator makes against a topic's configs, each failure
naming the record by its index in the batch (Produce v8+ answers them as `record_errors`):

- a compacted topic refuses a record without a key: INVALID_RECORD;
- a CreateTime topic refuses a record whose timestamp lies more than
  message.timestamp.before.max.ms before, or message.timestamp.after.max.ms after, the
  broker's clock: INVALID_TIMESTAMP. A record without a timestamp (-1) passes, as in Kafka.

One bad record refuses the whole batch, which carries every record's error and Kafka's
message for the lot (LogValidator.processRecordErrors): INVALID_TIMESTAMP as soon as one
record has a bad timestamp, else INVALID_RECORD listing the first three errors as Java prints
them. Records that do not parse were refused earlier, for the whole batch and without record
errors (wire/record_validation.py), as Kafka refuses them.

A check applies to a compacted topic, and to a CreateTime topic with a bound tighter than
Long.MAX_VALUE (Kafka 4's one-hour message.timestamp.after.max.ms makes that every CreateTime
topic). It decides from the record walk's summary (wire/record_walk.py: the smallest and largest
timestamp, the keyless count): a producer's batch brings the one its produce check made, a
batch of the broker's own is walked here. Only a batch that breaks a rule is read record by
record in Python, to name each record. Reading every batch that way cost ~3 µs a record; walking
a compressed batch a second time cost a second inflate (190-250 µs for 1,000 records).
"""

from __future__ import annotations

from typing import NamedTuple

from wire.error_codes import ErrorCode
from segment.compaction.cleaning_policy import compacts
from segment.log import LogConfig
from wire.record_batch import BatchHeader, InvalidBatch
from wire.record_validation import walk_records
from wire.record_walk import RecordSummary
from wire.records import InvalidRecords, iter_records, records_region

from .partition_errors import PartitionError

_FOREVER = 2**63 - 1
_NO_TIMESTAMP = -1


class RecordError(NamedTuple):
    batch_index: int
    message: str

    def __str__(self) -> str:  # Java's ProduceResponse.RecordError.toString
        return f"RecordError(batchIndex={self.batch_index}, message='{self.message}')"


class RecordsRejected(PartitionError):
    """Records of a batch that the topic's configs refuse; `code` is INVALID_RECORD or
    INVALID_TIMESTAMP."""

    def __init__(self, code: ErrorCode, message: str, record_errors: tuple[RecordError, ...]) -> None:
        super().__init__(message)
        self.code, self.record_errors = code, record_errors


def check_records(batch, header: BatchHeader, config: LogConfig, topic_partition: str, now_ms: int,
                  walked: RecordSummary | None = None) -> None:
    """Raise RecordsRejected if a record of `batch` breaks the topic's rules. `walked`: the
    produce check's summary of it; None: walked here."""
    keyed = compacts(config.cleanup_policy)
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    timed = config.message_timestamp_type == "CreateTime" and (before < _FOREVER or after < _FOREVER)
    if not keyed and not timed:
        return
    if walked is None:  # a batch of the broker's own (a coordinator's)
        try:
            _, region = records_region(batch)
            walked = walk_records(region, 0, len(region), header.record_count, False)
        except (InvalidRecords, InvalidBatch) as exc:
            raise RecordsRejected(ErrorCode.invalid_record, str(exc), ()) from None
    _keys, low, high, keyless = walked
    if (not keyed or not keyless) and (not timed or (now_ms - (header.base_timestamp + low) <= before
                                                     and header.base_timestamp + high - now_ms <= after)):
        return  # no record breaks a rule (a record without a timestamp, -1, may take the long way)
    errors, bad_timestamp = [], False
    try:
        for index, record in enumerate(iter_records(batch)):
            if keyed and record.key is None:
                errors.append(RecordError(index, "Compacted topic cannot accept message without key in topic "
                                                 f"partition {topic_partition}."))
            elif timed and record.timestamp != _NO_TIMESTAMP and (
                    now_ms - record.timestamp > before or record.timestamp - now_ms > after):
                bad_timestamp = True
                errors.append(RecordError(index, f"Timestamp {record.timestamp} of message with offset "
                                                 f"{record.offset} is out of range. The timestamp should be within "
                                                 f"[{now_ms - before}, {now_ms + after}]"))
    except InvalidRecords as exc:  # the walk read these records already: a surprise is still INVALID_RECORD
        raise RecordsRejected(ErrorCode.invalid_record, str(exc), ()) from None
    if bad_timestamp:
        raise RecordsRejected(ErrorCode.invalid_timestamp, "One or more records have been rejected due to invalid timestamp",
                              tuple(errors))
    if errors:
        shown = ", ".join(map(str, errors[:3]))
        raise RecordsRejected(ErrorCode.invalid_record, f"One or more records have been rejected due to {len(errors)} record "
                                                f"errors in total, and only showing the first three errors at most: "
                                                f"[{shown}]", tuple(errors))
