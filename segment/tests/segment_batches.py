"""Batches for the segment engine's tests: built by kafka-python's own builder, appended and read
back by offset, and the small segments that make a few batches roll."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from segment.tests.log_configs import log_config

SMALL = log_config(segment_bytes=2048, index_interval_bytes=256)


def make_batch(n: int, ts: int = 1_000, value_size: int = 20) -> bytearray:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for i in range(n):
        builder.append(i, timestamp=ts + i, key=b"k%d" % i, value=b"v" * value_size, headers=[])
    return builder.build()


def read_offsets(plog, regions) -> list[int]:
    data = b"".join(plog.read_bytes(r) for r in regions)
    records = MemoryRecords(data)
    out = []
    while records.has_next():
        batch = records.next_batch()
        out.extend(rec.offset for rec in batch)
    return out


def fill(plog, sizes, ts=1_000):
    for n in sizes:
        plog.append(make_batch(n, ts), 0, ts)
        ts += n
