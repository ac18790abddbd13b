"""wire/varint.py against kafka-python's varint codec (an independent implementation), Java's
handling of over-long encodings, and the malformed ones each reader must refuse."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import decode_varint, encode_varint

from wire.framing import PeerProtocolError
from wire.protocol import skip_tagged_fields
from wire.varint import INT64_BYTES, INT64_MASK, MalformedVarint, read_varint, write_varint

int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)


def kafka_python_bytes(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


@given(int32s, st.binary(max_size=4))
def test_an_int32_reads_back_as_kafka_python_wrote_it(value, after):
    data = b"\x07" + kafka_python_bytes(value) + after  # a byte before it, bytes after it
    assert read_varint(data, 1, len(data)) == (value, len(data) - len(after))


@given(int64s)
def test_an_int64_reads_back_as_kafka_python_wrote_it(value):
    data = kafka_python_bytes(value)
    assert read_varint(data, 0, len(data), INT64_BYTES, INT64_MASK) == (value, len(data))


@given(int64s)
def test_what_we_write_kafka_python_reads(value):
    out = bytearray()
    write_varint(value, out)
    assert decode_varint(out, 0) == (value, len(out))


@pytest.mark.parametrize("data,value", [
    (b"\x00", 0), (b"\x7f", 127), (b"\x80\x01", 128), (b"\xff\xff\xff\xff\x0f", 2**32 - 1),
    (b"\xff\xff\xff\xff\x7f", 2**32 - 1),  # Java reads 5 bytes into an int: the excess bits vanish
])
def test_unsigned_varints(data, value):
    assert read_varint(data, 0, len(data), unsigned=True) == (value, len(data))


def test_a_five_byte_varint_keeps_the_low_32_bits_as_java_does():
    assert read_varint(b"\x82\x80\x80\x80\x70", 0, 5) == (1, 5)  # zigzag 2 plus bits Java drops


@pytest.mark.parametrize("data,end,complaint", [
    (b"\xff\xff\xff\xff\xff\x01", 6, "longer than 5 bytes"),
    (b"\x80\x80", 2, "past the end"),
    (b"\x80\x80\x01", 2, "past the end"),  # the varint goes on, but its data ends at 2
    (b"", 0, "past the end"),
])
def test_malformed_varints_are_refused(data, end, complaint):
    with pytest.raises(MalformedVarint, match=complaint):
        read_varint(data, 0, end)


def test_an_eleven_byte_varlong_is_refused():
    data = b"\xff" * 10 + b"\x01"
    with pytest.raises(MalformedVarint, match="longer than 10 bytes"):
        read_varint(data, 0, len(data), INT64_BYTES, INT64_MASK)


def test_header_tagged_fields_are_skipped_and_bad_ones_are_the_peers_fault():
    tags = b"\x02" + b"\x00\x01x" + b"\x81\x01\x02yz"  # two fields: tag 0 (1 byte), tag 129 (2)
    assert skip_tagged_fields(tags + b"body", 0) == len(tags)
    for bad in (b"\x01\x00\x80", b"\xff\xff\xff\xff\xff\x01"):  # cut inside a size; six bytes
        with pytest.raises(PeerProtocolError, match="tagged fields"):
            skip_tagged_fields(bad, 0)
