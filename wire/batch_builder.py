"""Encoding a record batch v2 for records the broker itself writes (group metadata, offsets),
for `twinlog produce` (broker/cli/produce.py: build_batches splits at the topic's max.message.bytes)
and for the records a key lookup picks out of producers' batches (broker/key_topic.py).

Producers' batches are never re-encoded on the produce or fetch path. The header layout is
drawn in record_batch.py. Each record is:

    varint  length            (of the rest of the record)
    int8    attributes        (0)
    varlong timestampDelta    (from the batch's baseTimestamp)
    varint  offsetDelta
    varint  keyLength, bytes key      (-1: null)
    varint  valueLength, bytes value  (-1: null, a tombstone)
    varint  headerCount, then per header: varint keyLength, key (UTF-8), varint valueLength, value

Uncompressed, no producer id unless given; baseOffset 0 for records to be appended (the log assigns
offsets), the records' own offset for batches built to be read.
"""

from __future__ import annotations

import crc32c

from .record_batch import _HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC, NO_PRODUCER_ID, TRANSACTIONAL_BIT
from .varint import write_varint


def _bytes(part: bytes | None, out: bytearray) -> None:
    if part is None:
        write_varint(-1, out)
    else:
        write_varint(len(part), out)
        out += part


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
            headers=()) -> bytes:
    body = bytearray(b"\x00")
    write_varint(timestamp_delta, body)
    write_varint(offset_delta, body)
    _bytes(key, body)
    _bytes(value, body)
    write_varint(len(headers), body)
    for name, hvalue in headers:
        _bytes(name.encode(), body)
        _bytes(hvalue, body)
    out = bytearray()
    write_varint(len(body), out)
    return bytes(out + body)


def _batch(base_offset: int, payload: bytes, count: int, last_offset_delta: int,
           first_ts: int, max_ts: int, attributes: int = 0,
           producer: tuple[int, int, int] = (NO_PRODUCER_ID, -1, -1)) -> bytearray:
    """`attributes` 0: no compression, CreateTime, not transactional; `producer`: (id, epoch,
    base sequence)."""
    batch = bytearray(HEADER_SIZE) + payload
    _HEADER.pack_into(
        batch, 0,
        base_offset,
        len(batch) - LOG_OVERHEAD,
        -1,  # partitionLeaderEpoch
        MAGIC,
        0,  # crc, below
        attributes,
        last_offset_delta,
        first_ts, max_ts,
        *producer,
        count,
    )
    crc = crc32c.crc32c(memoryview(batch)[21:])
    batch[17:21] = crc.to_bytes(4, "big")
    return batch


def build_batch(records: list[tuple], timestamp_ms: int, producer: tuple[int, int, int] | None = None,
                transactional: bool = False) -> bytearray:
    """One uncompressed batch of (key, value) or (key, value, headers) records to append, all
    stamped `timestamp_ms`; headers are (name, value) pairs. `producer`: (id, epoch, base
    sequence) of an idempotent producer, whose batch may be `transactional`."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    payload = b"".join(_record(i, 0, *record) for i, record in enumerate(records))
    return _batch(0, payload, len(records), len(records) - 1, timestamp_ms, timestamp_ms,
                  attributes=TRANSACTIONAL_BIT if transactional else 0,
                  producer=producer or (NO_PRODUCER_ID, -1, -1))


def build_batches(records: list[tuple], timestamp_ms: int, max_batch_bytes: int) -> list[tuple[bytearray, int]]:
    """`records` as consecutive batches of at most `max_batch_bytes` each (the whole batch,
    header included: what Kafka compares with max.message.bytes), as (batch, record count).
    A record too large for a batch of its own still gets one, for the broker to refuse with
    MESSAGE_TOO_LARGE. Each record is encoded once, and again only when it starts a new batch
    (its offset delta becomes 0)."""
    out: list[tuple[bytearray, int]] = []
    payload, count = bytearray(), 0
    for record in records:
        encoded = _record(count, 0, *record)
        if count and HEADER_SIZE + len(payload) + len(encoded) > max_batch_bytes:
            out.append((_batch(0, bytes(payload), count, count - 1, timestamp_ms, timestamp_ms), count))
            payload, count = bytearray(), 0
            encoded = _record(0, 0, *record)
        payload += encoded
        count += 1
    if count:
        out.append((_batch(0, bytes(payload), count, count - 1, timestamp_ms, timestamp_ms), count))
    return out


def build_record_batch(base_offset: int, last_offset: int,
                       records: list[tuple[int, int, bytes | None, bytes | None, tuple]]) -> bytearray:
    """One uncompressed batch spanning offsets base_offset..last_offset that holds the given
    (offset, timestamp, key, value, headers) records, as a fetch returns them.

    Like a batch the log cleaner has compacted, it may hold fewer records than it spans, or
    none: consumers continue after its last offset either way (record batch v2 keeps the
    span so that they do)."""
    if any(not base_offset <= r[0] <= last_offset for r in records) or last_offset < base_offset:
        raise ValueError("records must lie within the batch's offsets")
    if not records:
        return _batch(base_offset, b"", 0, last_offset - base_offset, -1, -1)
    first_ts = records[0][1]
    payload = b"".join(_record(off - base_offset, ts - first_ts, key, value, headers)
                       for off, ts, key, value, headers in records)
    return _batch(base_offset, payload, len(records), last_offset - base_offset, first_ts,
                  max(ts for _o, ts, *_ in records))
