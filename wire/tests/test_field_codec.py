"""The field cursor over internal-topic records: what it writes it reads back, and any bytes at
all either decode or raise the caller's error class, never anything else."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wire.field_codec import FieldReader, FieldWriter


class Bad(ValueError):
    pass


text = st.one_of(st.none(), st.text(max_size=20))
tags = st.dictionaries(st.integers(0, 300), st.binary(max_size=10), max_size=4)


@given(a=st.integers(-2**15, 2**15 - 1), b=st.integers(-2**63, 2**63 - 1), s=text, cs=text,
       data=st.binary(max_size=30), ints=st.lists(st.integers(-2**31, 2**31 - 1), max_size=8),
       fields=tags, flexible=st.booleans())
def test_what_is_written_reads_back(a, b, s, cs, data, ints, fields, flexible):
    topic_id = uuid.uuid4()
    w = FieldWriter().i16(a).i64(b).nullable_string(s).compact_nullable_string(cs).nullable_bytes(data)
    w.compact_bytes(data).uuid(topic_id).array(ints, w.i32, flexible).tagged_fields(fields).i8(-1)
    r = FieldReader(w.value(), Bad)
    assert (r.i16(), r.i64(), r.nullable_string(), r.compact_nullable_string()) == (a, b, s, cs)
    assert (r.nullable_bytes(), r.compact_bytes(), r.uuid()) == (data, data, topic_id)
    assert r.array(r.i32, flexible) == ints
    assert r.tagged_fields() == fields and r.i8() == -1 and r.pos == len(w.value())


def test_null_arrays_and_null_strings():
    w = FieldWriter().count(None, True).count(None, False).nullable_string(None).nullable_bytes(None)
    r = FieldReader(w.value(), Bad)
    assert (r.count(True), r.count(False), r.nullable_string(), r.nullable_bytes()) == (None, None, None, None)


@pytest.mark.parametrize("data, read", [
    (b"\x00", FieldReader.i16),  # cut short
    (b"\x00\x05ab", FieldReader.string),  # a length past the end
    (b"\xff\xff", FieldReader.string),  # null where a string must be
    (b"\x00\x02\xff\xfe", FieldReader.string),  # not UTF-8
    (b"\xff\xff\xff\xff\xff\xff", FieldReader.uvarint),  # a varint of more than 5 bytes
    (b"\x7f\xff\xff\xff", lambda r: r.count(False)),  # an array longer than the record
    (b"\x01\x00\x09ab", FieldReader.tagged_fields),  # a tagged field past the end
])
def test_each_malformed_field_raises_the_callers_error(data, read):
    with pytest.raises(Bad):
        read(FieldReader(data, Bad))


@given(st.binary(max_size=40), st.lists(st.sampled_from(
    ["i8", "i16", "i32", "i64", "uvarint", "uuid", "string", "nullable_string", "nullable_bytes",
     "compact_nullable_string", "compact_bytes", "tagged_fields"]), min_size=1, max_size=8))
def test_any_bytes_decode_or_raise_only_the_callers_error(data, fields):
    r = FieldReader(data, Bad)
    try:
        for name in fields:
            getattr(r, name)()
    except Bad:
        pass
