"""Records as a producer sends them, for the record and recompression tests: the codec ids
kafka-python and Kafka share, compressible records, and the Records they read back as."""

from __future__ import annotations

from wire.records import Record

CODECS = [0, 1, 2, 3, 4]  # none, gzip, snappy, lz4, zstd: the ids kafka-python and Kafka share
T0 = 1_700_000_000_000


def expected(records, base_offset=0):
    return [
        Record(base_offset + i, ts, key, value, tuple(tuple(h) for h in headers))
        for i, (ts, key, value, headers) in enumerate(records)
    ]


def compressible_records(n=50, value_size=40):
    return [
        (T0 + (i * 7919) % 97, None if i % 5 == 0 else b"key-%d" % (i % 9), b"v" * value_size,
         [("trace", b"abc"), ("empty", None)] if i % 3 == 0 else [])
        for i in range(n)
    ]
