"""Encoding a record batch v2 for records the broker itself writes (group metadata, offsets).

Producers' batches are never built or re-encoded here; this is only for the broker's own
internal records. The header layout is drawn in record_batch.py. Each record is:

    varint  length            (of the rest of the record)
    int8    attributes        (0)
    varlong timestampDelta    (from the batch's baseTimestamp)
    varint  offsetDelta
    varint  keyLength, bytes key      (-1: null)
    varint  valueLength, bytes value  (-1: null, a tombstone)
    varint  headerCount       (0)

Uncompressed, no producer id, baseOffset 0 (the log assigns offsets on append).
"""

from __future__ import annotations

import crc32c

from .record_batch import _HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC, NO_PRODUCER_ID


def _zigzag_varint(value: int, out: bytearray) -> None:
    value = (value << 1) ^ (value >> 63)
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(b"\x00")
    _zigzag_varint(timestamp_delta, body)
    _zigzag_varint(offset_delta, body)
    for part in (key, value):
        if part is None:
            _zigzag_varint(-1, body)
        else:
            _zigzag_varint(len(part), body)
            body += part
    _zigzag_varint(0, body)
    out = bytearray()
    _zigzag_varint(len(body), out)
    return bytes(out + body)


def build_batch(records: list[tuple[bytes | None, bytes | None]], timestamp_ms: int) -> bytearray:
    """One uncompressed batch of (key, value) records, all stamped `timestamp_ms`."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    payload = b"".join(_record(i, 0, key, value) for i, (key, value) in enumerate(records))
    batch = bytearray(HEADER_SIZE) + payload
    _HEADER.pack_into(
        batch, 0,
        0,  # baseOffset
        len(batch) - LOG_OVERHEAD,
        -1,  # partitionLeaderEpoch
        MAGIC,
        0,  # crc, below
        0,  # attributes: no compression, CreateTime, not transactional
        len(records) - 1,
        timestamp_ms, timestamp_ms,
        NO_PRODUCER_ID, -1, -1,
        len(records),
    )
    crc = crc32c.crc32c(memoryview(batch)[21:])
    batch[17:21] = crc.to_bytes(4, "big")
    return batch
