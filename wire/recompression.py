"""A producer's batch rewritten in the topic's codec (compression.type), as Kafka's LogValidator
does when the topic names a codec other than `producer` and the batch's differs.

Only the compression layer changes. The records region (record_batch.py: everything after the
61-byte header) is the producer's records laid end to end; they are taken as the record check
decompressed them and compressed again, whole, in the target codec: keys, values, headers,
offset and timestamp deltas stay the producer's bytes. The header keeps every field (producer
id, epoch, sequence, timestamps, transactional bit) but the codec bits of `attributes`, and gets
the new batchLength and CRC. Kafka's LogValidator rebuilds the records one by one instead; what
a consumer reads is the same.

A batch already in the target codec, and every batch of a `producer` topic, is never touched
(target_codec answers None): the produce path's common case costs nothing here.

How each codec is written, so every client reads it (wire/records.py reads all of them):

    gzip    a gzip stream (RFC 1952), as Java's GZIPOutputStream
    snappy  xerial's framing, as the Java client writes it: magic b"\\x82SNAPPY\\0", version 1,
            compatible version 1 (big-endian int32 each), then chunks of at most 32 KiB of
            input, each a big-endian int32 length and a raw snappy block
    lz4     an LZ4 frame with independent blocks, which Kafka's KafkaLZ4BlockInputStream
            requires ("Dependent block stream is unsupported")
    zstd    a zstd frame
"""

from __future__ import annotations

import struct

import cramjam
import crc32c

from .record_batch import _ATTRS, _CRC, COMPRESSION_MASK, HEADER_SIZE, LOG_OVERHEAD, BatchHeader

# compression.type's values -> the codec id in a batch's attributes (`producer`: keep the batch's)
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PRODUCER = "producer"

_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_CHUNK = 32 * 1024  # the Java client's (xerial's default block size)
_INT32 = struct.Struct(">i")  # a chunk's length; the batchLength field
_GZIP_DEFAULT_LEVEL = 6  # Kafka's -1 is zlib's default, which is 6


def target_codec(compression_type: str, source: int) -> int | None:
    """The codec a batch compressed with `source` must be rewritten in, or None to keep it."""
    if compression_type == PRODUCER:
        return None
    codec = CODECS[compression_type]
    return None if codec == source else codec


def recompress(batch, header: BatchHeader, records, codec: int, level: int | None) -> bytearray:
    """`batch` (one producer batch, `header` its parsed header) with its records region, given
    uncompressed as `records`, written in `codec` at `level` (the topic's compression.*.level;
    None for snappy, which has none)."""
    payload = _compress(codec, records, level)
    out = bytearray(HEADER_SIZE + len(payload))
    out[:HEADER_SIZE] = memoryview(batch)[:HEADER_SIZE]
    out[HEADER_SIZE:] = payload
    _INT32.pack_into(out, 8, len(out) - LOG_OVERHEAD)
    _ATTRS.pack_into(out, 21, (header.attributes & ~COMPRESSION_MASK) | codec)
    _CRC.pack_into(out, 17, crc32c.crc32c(memoryview(out)[21:]))
    return out


def _compress(codec: int, records, level: int | None):
    if codec == 0:
        return records
    if codec == 1:
        return cramjam.gzip.compress(records, level=_GZIP_DEFAULT_LEVEL if level in (None, -1) else level)
    if codec == 2:
        return _xerial_snappy(memoryview(records))
    if codec == 3:
        compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        compressor.compress(bytes(records))  # its streaming API takes bytes, not a memoryview
        return compressor.finish()
    return cramjam.zstd.compress(records, level=level)


def _xerial_snappy(records: memoryview) -> bytearray:
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(records), _XERIAL_CHUNK):
        block = cramjam.snappy.compress_raw(records[start : start + _XERIAL_CHUNK])
        out += _INT32.pack(len(block))
        out += block
    return out
