"""LogValidator's per-record checks (replica/record_checks.py): which records of a batch a
topic's configs refuse, by batch index, with Kafka's messages."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from wire.error_codes import ErrorCode
from replica.record_checks import RecordError, RecordsRejected, check_records
from wire.record_batch import parse_header
from wire.record_walk import RecordSummary
from segment.tests.log_configs import log_config

NOW = 1_700_000_000_000
HOUR = 3_600_000


def make_batch(values, timestamps=None, keys=None, codec=0) -> bytes:
    """A producer's batch v2, written by kafka-python's builder."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, value in enumerate(values):
        assert builder.append(i, timestamps[i] if timestamps else NOW, keys[i] if keys else None, value, [])
    return bytes(builder.build())


def _check(batch, config, walked: RecordSummary | None = None) -> None:
    check_records(batch, parse_header(batch), config, "t-0", NOW, walked)


def _rejected(batch, config) -> RecordsRejected:
    with pytest.raises(RecordsRejected) as caught:
        _check(batch, config)
    return caught.value


def test_the_defaults_read_no_record():
    # Timestamps a day apart and no keys: nothing to refuse on a delete, unbounded topic.
    _check(make_batch([b"a", b"b"], timestamps=[0, NOW + 24 * HOUR]), log_config())


@pytest.mark.parametrize("codec", [0, 1], ids=["uncompressed", "gzip"])
def test_timestamps_outside_the_bounds_are_each_named_by_batch_index(codec):
    config = log_config(message_timestamp_before_max_ms=HOUR, message_timestamp_after_max_ms=HOUR)
    batch = make_batch([b"ok", b"old", b"ok", b"new", b"none"],
                       timestamps=[NOW, NOW - HOUR - 1, NOW + HOUR, NOW + HOUR + 1, -1], codec=codec)
    exc = _rejected(batch, config)
    assert exc.code is ErrorCode.invalid_timestamp
    assert str(exc) == "One or more records have been rejected due to invalid timestamp"
    window = f"[{NOW - HOUR}, {NOW + HOUR}]"
    assert exc.record_errors == (
        RecordError(1, f"Timestamp {NOW - HOUR - 1} of message with offset 1 is out of range. "
                       f"The timestamp should be within {window}"),
        RecordError(3, f"Timestamp {NOW + HOUR + 1} of message with offset 3 is out of range. "
                       f"The timestamp should be within {window}"),
    )


def test_a_record_older_than_the_first_is_found_wherever_it_sits():
    # The batch's base timestamp is the first record's, its max the largest: neither bounds a
    # later record that is older than the first, so the check must see every record's.
    config = log_config(message_timestamp_before_max_ms=HOUR)
    exc = _rejected(make_batch([b"a", b"b", b"c"], timestamps=[NOW, NOW - 2 * HOUR, NOW]), config)
    assert [e.batch_index for e in exc.record_errors] == [1]
    _check(make_batch([b"a", b"b"], timestamps=[NOW, NOW - HOUR]), config)


def test_a_producers_batch_is_decided_by_its_produce_walk_not_walked_again():
    # The produce check's summary comes with the batch: what it says decides, so a summary that
    # contradicts the records (never the case in the broker) shows no second walk ran.
    batch = make_batch([b"old"], timestamps=[NOW - 2 * HOUR])
    config = log_config(message_timestamp_before_max_ms=HOUR)
    _check(batch, config, RecordSummary(None, 2 * HOUR, 2 * HOUR, 0))
    assert _rejected(batch, config).code is ErrorCode.invalid_timestamp


def test_timestamps_on_the_bounds_and_log_append_time_topics_pass():
    bounded = dict(message_timestamp_before_max_ms=HOUR, message_timestamp_after_max_ms=HOUR)
    _check(make_batch([b"a", b"b"], timestamps=[NOW - HOUR, NOW + HOUR]), log_config(**bounded))
    # LogAppendTime: the broker's clock replaces the producer's, which Kafka does not check.
    _check(make_batch([b"a"], timestamps=[0]), log_config(message_timestamp_type="LogAppendTime", **bounded))


def test_keyless_records_on_a_compacted_topic_list_the_first_three_in_the_message():
    batch = make_batch([b"v"] * 5, keys=[None, b"k", None, None, None])
    exc = _rejected(batch, log_config(cleanup_policy="compact"))
    assert exc.code is ErrorCode.invalid_record
    reason = "Compacted topic cannot accept message without key in topic partition t-0."
    assert exc.record_errors == tuple(RecordError(i, reason) for i in (0, 2, 3, 4))
    assert str(exc) == (
        "One or more records have been rejected due to 4 record errors in total, and only showing the first "
        f"three errors at most: [RecordError(batchIndex=0, message='{reason}'), RecordError(batchIndex=2, "
        f"message='{reason}'), RecordError(batchIndex=3, message='{reason}')]")


def test_a_bad_timestamp_makes_the_batch_invalid_timestamp_even_beside_keyless_records():
    config = log_config(cleanup_policy="compact", message_timestamp_before_max_ms=HOUR)
    exc = _rejected(make_batch([b"v", b"v"], keys=[None, b"k"], timestamps=[NOW, 0]), config)
    assert exc.code is ErrorCode.invalid_timestamp
    assert [e.batch_index for e in exc.record_errors] == [0, 1]
