"""Filtering the records of one record batch v2 for the log cleaner (Kafka's MemoryRecords.filterTo).

A batch comes out one of four ways (Outcome):

    KEPT       every record kept: the input bytes, copied, never re-encoded
    DROPPED    every record dropped and nothing asks to keep the batch: nothing written
    REWRITTEN  some records dropped: a new batch of the kept records
    EMPTIED    every record dropped but `retain_empty` (the last batch of an idempotent
               producer, which Kafka keeps so producer state survives): a header alone

A rewritten batch keeps the input's header except batchLength, crc, recordCount and, under
CreateTime, maxTimestamp (the largest kept timestamp):

    baseOffset, partitionLeaderEpoch, attributes (codec, timestamp type, transactional),
    lastOffsetDelta (so the batch still spans its original offsets and producer state
    derived from it — last sequence, last offset — is unchanged), baseTimestamp,
    producerId, producerEpoch, baseSequence

Because baseOffset and baseTimestamp stay, each kept record's offsetDelta and
timestampDelta still hold, so its bytes are copied from the (decompressed) records region
as they were and only the region is compressed again, with the input's codec (snappy in the
framing the input used: xerial's for the Java client and kafka-python, a raw block for
librdkafka). Kafka's builder moves baseTimestamp to the first kept record and re-encodes
each record; the result reads the same.

An emptied batch is Kafka's DefaultRecordBatch.writeEmptyHeader: recordCount 0, no codec,
baseTimestamp -1, the input's maxTimestamp, same offsets span and producer fields.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Callable

import cramjam
import crc32c

from wire import records as wire_records
from wire.record_batch import _HEADER, COMPRESSION_MASK, HEADER_SIZE, LOG_OVERHEAD, TIMESTAMP_TYPE_BIT

Record = wire_records.Record

_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # xerial's default block size, as the Java client writes
_CHUNK_LENGTH = struct.Struct(">i")
_NO_TIMESTAMP = -1


class Outcome(enum.Enum):
    KEPT = "kept"
    DROPPED = "dropped"
    REWRITTEN = "rewritten"
    EMPTIED = "emptied"


@dataclass(frozen=True, slots=True)
class FilterResult:
    outcome: Outcome
    data: bytes  # the batch to write; b"" when DROPPED
    records_kept: int
    records_dropped: int


def filter_batch(batch, keep: Callable[[Record], bool], *, retain_empty: bool) -> FilterResult:
    """Keep the records of the batch at the start of `batch` for which keep(record) holds.

    A control batch is filtered like any other: the caller's `keep` says whether its marker
    stays (txn_cleaning.py). Raises InvalidRecords when the records cannot be read."""
    header, region = wire_records.records_region(batch)
    whole = bytes(memoryview(batch)[: header.size])
    if header.record_count == 0:  # an emptied batch from an earlier clean
        if retain_empty:
            return FilterResult(Outcome.KEPT, whole, 0, 0)
        return FilterResult(Outcome.DROPPED, b"", 0, 0)
    kept_spans: list[tuple[int, int]] = []
    max_timestamp = _NO_TIMESTAMP
    dropped = 0
    for start, end, record in wire_records.record_spans(header, region):
        if keep(record):
            kept_spans.append((start, end))
            max_timestamp = max(max_timestamp, record.timestamp)
        else:
            dropped += 1
    if not dropped:
        return FilterResult(Outcome.KEPT, whole, len(kept_spans), 0)
    if kept_spans:
        payload = b"".join(region[s:e] for s, e in kept_spans)
        codec = header.compression
        if codec:
            payload = _compress(codec, payload, memoryview(batch)[HEADER_SIZE : header.size])
        if header.attributes & TIMESTAMP_TYPE_BIT:
            max_timestamp = header.max_timestamp  # LogAppendTime: the batch's time for every record
        rebuilt = _encode(header, header.attributes, header.base_timestamp, max_timestamp,
                          len(kept_spans), payload)
        return FilterResult(Outcome.REWRITTEN, rebuilt, len(kept_spans), dropped)
    if retain_empty:
        empty = _encode(header, header.attributes & ~COMPRESSION_MASK, _NO_TIMESTAMP, header.max_timestamp, 0, b"")
        return FilterResult(Outcome.EMPTIED, empty, 0, dropped)
    return FilterResult(Outcome.DROPPED, b"", 0, dropped)


def _encode(header, attributes: int, base_timestamp: int, max_timestamp: int, count: int, payload: bytes) -> bytes:
    out = bytearray(HEADER_SIZE + len(payload))
    _HEADER.pack_into(
        out, 0,
        header.base_offset,
        len(out) - LOG_OVERHEAD,
        header.partition_leader_epoch,
        header.magic,
        0,  # crc, below
        attributes,
        header.last_offset_delta,
        base_timestamp,
        max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        count,
    )
    out[HEADER_SIZE:] = payload
    out[17:21] = crc32c.crc32c(memoryview(out)[21:]).to_bytes(4, "big")
    return bytes(out)


def _compress(codec: int, data: bytes, original: memoryview) -> bytes:
    if codec == 1:
        return bytes(cramjam.gzip.compress(data))
    if codec == 2:
        if original[:8] != _XERIAL_HEADER[:8]:
            return bytes(cramjam.snappy.compress_raw(data))
        parts = [_XERIAL_HEADER]
        for pos in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[pos : pos + _XERIAL_BLOCK]))
            parts += (_CHUNK_LENGTH.pack(len(block)), block)
        return b"".join(parts)
    if codec == 3:
        return bytes(cramjam.lz4.compress(data))  # an LZ4 frame of independent blocks, as Kafka's
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise wire_records.InvalidRecords(f"unknown compression codec {codec}")
