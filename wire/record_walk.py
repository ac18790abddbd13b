"""The record framing walk, in pure Python: every record of a batch read as Kafka's
DefaultRecord.readFrom reads it, nothing kept but (optionally) the keys.

The layout of a record is drawn in records.py. For each of the `count` records laid end
to end in data[pos:end] the walk checks, as Kafka does (every failure is Kafka's
InvalidRecordException, INVALID_RECORD to a producer):

- the length varint (at most 5 bytes) is >= 6, the smallest body, and fits in what remains;
- timestampDelta is a varlong of at most 10 bytes, offsetDelta a varint of at most 5;
- offsetDelta is the record's index (Kafka rewrites a batch whose inner offsets are not
  0..n-1; we never re-encode, so such a batch is refused);
- key and value lengths are -1 (null) or a length inside the record;
- the header count is >= 0 and no larger than the bytes left, each header key length >= 0
  and inside the record, each header value length -1 or inside the record;
- the fields end exactly where the length said, and the records end exactly at `end`.

Beside the keys, the walk gives the smallest and largest timestampDelta and the number of
records without a key (RecordSummary): what the topic's per-record rules
(replica/record_checks.py: message.timestamp.before/after.max.ms, a compacted topic's keys)
need to know whether any record breaks them, from the same pass that checks the framing.

wire/_record_walk.pyx is the same walk compiled; this module is its fallback and the
oracle its tests compare it against. Both raise InvalidRecord with the same message.
"""

from __future__ import annotations

from typing import NamedTuple

from .record_batch import InvalidRecord
from .varint import INT64_BYTES, INT64_MASK, MalformedVarint, read_varint

_MIN_RECORD_BODY = 6  # attributes, timestampDelta, offsetDelta, keyLength, valueLength, headerCount


class RecordSummary(NamedTuple):
    """What one walk of a batch's records found, besides that they are well framed."""

    keys: set[bytes] | None  # the distinct non-null keys, when asked for
    low: int  # the smallest timestampDelta (0 for no records)
    high: int  # the largest
    keyless: int  # records without a key


def walk_records(data, pos: int, end: int, count: int, want_keys: bool) -> RecordSummary:
    """Check the framing of `count` records in data[pos:end]; their summary, with their
    distinct non-null keys when `want_keys` (the commitlog's key index). Raises InvalidRecord."""
    keys: set[bytes] | None = set() if want_keys else None
    low = high = keyless = 0
    try:
        for index in range(count):
            if pos >= end:
                raise InvalidRecord(f"batch declares {count} records but holds {index}")
            b = data[pos]
            if b < 0x80:  # the common one-byte varints are read inline: this runs per record
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                length, pos = read_varint(data, pos, end)
            if length < _MIN_RECORD_BODY or length > end - pos:
                raise InvalidRecord(f"record {index} claims {length} bytes, {end - pos} remain")
            record_end = pos + length
            pos += 1  # attributes: unused since v2
            b = data[pos]
            if b < 0x80:
                timestamp_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                timestamp_delta, pos = read_varint(data, pos, end, INT64_BYTES, INT64_MASK)
            if index == 0 or timestamp_delta < low:
                low = timestamp_delta
            if index == 0 or timestamp_delta > high:
                high = timestamp_delta
            b = data[pos]
            if b < 0x80:
                offset_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                offset_delta, pos = read_varint(data, pos, end)
            if offset_delta != index:
                raise InvalidRecord(f"record {index} has offset delta {offset_delta}")
            b = data[pos]
            if b < 0x80:
                key_length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                key_length, pos = read_varint(data, pos, end)
            if key_length >= 0:
                if key_length > record_end - pos:
                    raise InvalidRecord(f"record {index}: key of {key_length} bytes runs past its record")
                if keys is not None:
                    keys.add(bytes(data[pos : pos + key_length]))
                pos += key_length
            elif key_length == -1:
                keyless += 1
            else:
                raise InvalidRecord(f"record {index} has a key length of {key_length}")
            b = data[pos]
            if b < 0x80:
                value_length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                value_length, pos = read_varint(data, pos, end)
            if value_length >= 0:
                if value_length > record_end - pos:
                    raise InvalidRecord(f"record {index}: value of {value_length} bytes runs past its record")
                pos += value_length
            elif value_length != -1:
                raise InvalidRecord(f"record {index} has a value length of {value_length}")
            b = data[pos]
            if b < 0x80:
                header_count, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                header_count, pos = read_varint(data, pos, end)
            if header_count:
                pos = _walk_headers(data, pos, record_end, end, header_count, index)
            if pos != record_end:
                raise InvalidRecord(f"record {index} claims {length} bytes, its fields take "
                                    f"{length + pos - record_end}")
    except IndexError:  # a one-byte varint or a field ran off the end of the data
        raise InvalidRecord("a record runs past the end of the batch") from None
    except MalformedVarint as exc:
        raise InvalidRecord(f"record {index}: {exc}") from None
    if pos != end:
        raise InvalidRecord(f"{end - pos} bytes follow the {count} declared records")
    return RecordSummary(keys, low, high, keyless)


def _walk_headers(data, pos: int, record_end: int, end: int, count: int, index: int) -> int:
    # Each header takes at least 2 bytes, so a count above the bytes left is refused before
    # looping on it (as Kafka's readFrom does).
    if count < 0 or count > record_end - pos:
        raise InvalidRecord(f"record {index} has an invalid header count {count}")
    for _ in range(count):
        key_length, pos = read_varint(data, pos, end)
        if key_length < 0 or key_length > record_end - pos:
            raise InvalidRecord(f"record {index}: header key of {key_length} bytes")
        pos += key_length
        value_length, pos = read_varint(data, pos, end)
        if value_length < -1 or value_length > record_end - pos:
            raise InvalidRecord(f"record {index}: header value of {value_length} bytes")
        if value_length > 0:
            pos += value_length
    return pos
