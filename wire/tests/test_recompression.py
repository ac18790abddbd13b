"""recompression.py: a batch rewritten in another codec holds the same records and header fields,
is a valid producer batch (CRC, length), and is read back by kafka-python's own decoder and by
the codecs' reference libraries (the Java client's framings: xerial snappy, independent LZ4
blocks)."""

from __future__ import annotations

import lz4.frame
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from wire.record_batch import HEADER_SIZE, parse_header, validate_produced
from wire.records import decompress_records, iter_records
from wire.recompression import CODECS, recompress, target_codec
from wire.tests.produced_records import CODECS as CODEC_IDS, compressible_records, expected

LEVELS = {0: None, 1: -1, 2: None, 3: 9, 4: 3}  # the topic configs' defaults


def producer_batch(records, codec):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=True,
                                        producer_id=4242, producer_epoch=7, base_sequence=11, batch_size=1 << 22)
    for offset_delta, (timestamp, key, value, headers) in enumerate(records):
        assert builder.append(offset_delta, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def uncompressed_region(batch):
    header = parse_header(batch)
    region = memoryview(batch)[HEADER_SIZE:header.size]
    return region if header.compression == 0 else decompress_records(header.compression, region, 1 << 26)


@pytest.mark.parametrize("source", CODEC_IDS)
@pytest.mark.parametrize("target", CODEC_IDS)
def test_every_codec_into_every_other(source, target):
    records = compressible_records(n=3000)  # ~150 KB: several snappy chunks and LZ4 blocks
    batch = producer_batch(records, source)
    header = parse_header(batch)
    out = recompress(batch, header, uncompressed_region(batch), target, LEVELS[target])
    new = validate_produced(out, 1 << 24)  # CRC and length sound
    assert new.compression == target
    assert new == header._replace(attributes=new.attributes, batch_length=new.batch_length, crc=new.crc)
    assert new.attributes & ~0x07 == header.attributes & ~0x07  # transactional bit kept
    assert list(iter_records(out)) == expected(records)
    theirs = DefaultRecordBatch(bytes(out))  # kafka-python's decoder, as a consumer reads it
    assert [(r.key, r.value) for r in theirs] == [(k, v) for _, k, v, _ in records]


def test_lz4_blocks_are_independent_as_kafka_requires():
    batch = producer_batch(compressible_records(n=3000), 0)
    out = recompress(batch, parse_header(batch), uncompressed_region(batch), 3, 9)
    flg = out[HEADER_SIZE + 4]
    assert flg & 0x20  # FLG's block independence bit
    assert lz4.frame.decompress(bytes(out[HEADER_SIZE:])) == bytes(uncompressed_region(batch))


def test_xerial_snappy_framing():
    batch = producer_batch(compressible_records(n=3000), 0)
    out = recompress(batch, parse_header(batch), uncompressed_region(batch), 2, None)
    assert bytes(out[HEADER_SIZE:HEADER_SIZE + 16]) == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"


def test_producer_and_matching_codecs_keep_the_batch():
    assert target_codec("producer", 3) is None
    assert target_codec("lz4", 3) is None
    assert target_codec("uncompressed", 0) is None
    assert target_codec("zstd", 0) == CODECS["zstd"] == 4
    assert target_codec("uncompressed", 1) == 0
