"""Batches for the compaction tests as a real client writes them: kafka-python's own builder, every
codec, plus RAW_SNAPPY (codec 2 written as librdkafka does), placed at a chosen base offset."""

from __future__ import annotations

import cramjam
from kafka.record.default_records import DefaultRecordBatchBuilder

from wire.record_batch import _HEADER, HEADER_SIZE, parse_header

RAW_SNAPPY = 5  # not a codec: codec 2 written as librdkafka does, one raw snappy block


def client_batch(records, *, codec=0, base_offset=0, producer=(-1, -1, -1), base_ts=1_000):
    """A batch as kafka-python's producer encodes it, then placed at `base_offset`."""
    kp_codec = 2 if codec == RAW_SNAPPY else codec
    builder = DefaultRecordBatchBuilder(2, kp_codec if kp_codec != 2 or codec == 2 else 0, False, *producer, 1 << 24)
    for i, (key, value, headers) in enumerate(records):
        builder.append(i, base_ts + i, key, value, headers)
    buf = builder.build() if codec != RAW_SNAPPY else _raw_snappy(builder.build())
    buf[0:8] = base_offset.to_bytes(8, "big")
    return bytes(buf)


def _raw_snappy(buf: bytearray) -> bytearray:
    h = parse_header(buf)
    payload = bytes(cramjam.snappy.compress_raw(bytes(buf[HEADER_SIZE:])))
    out = bytearray(HEADER_SIZE) + payload
    fields = list(_HEADER.unpack_from(buf))
    fields[1] = len(out) - 12
    fields[5] = h.attributes | 2
    _HEADER.pack_into(out, 0, *fields)
    import crc32c
    out[17:21] = crc32c.crc32c(memoryview(out)[21:]).to_bytes(4, "big")
    return out
