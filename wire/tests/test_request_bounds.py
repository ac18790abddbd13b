"""The pre-decode bounds walk: it must accept exactly what kio encodes and stop every oversized claim.

Oracle: for every served (api, version) a request built from its schema and encoded by kio's
own writer walks to its exact end. Then every byte of those encodings is corrupted in turn:
the walk either raises PeerProtocolError or lets it through, and whatever it lets through is
decoded by kio's native reader in a child process, which must not die (an abort there is the
bug this walk exists to prevent, and it would take pytest down with it if run in-process).
"""

from __future__ import annotations

import datetime
import io
import struct
import subprocess
import sys
import uuid
from dataclasses import fields, is_dataclass, replace
from types import NoneType, UnionType
from typing import get_args, get_origin

import pytest
from kio.schema.errors import ErrorCode
from kio.serial._introspect import classify_field
from wire.framing import PeerProtocolError
from wire.protocol import SERVED_VERSIONS, _writer, decode_request, request_class
from wire.request_bounds import _entity_step, check_request_body

_VALUES = {
    "bool": True, "int8": 1, "int16": 2, "uint16": 3, "int32": 4, "int64": 5, "float64": 0.5,
    "string": "name", "bytes": b"abc", "records": b"\x00" * 12, "uuid": uuid.UUID(int=7),
    "error_code": ErrorCode.none, "timedelta_i32": datetime.timedelta(milliseconds=9),
    "timedelta_i64": datetime.timedelta(milliseconds=10),
    "datetime_i64": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
}


def _sample(cls):
    """An entity with every field set and every array holding two elements."""
    values = {}
    for field in fields(cls):
        kind = classify_field(field)
        if is_dataclass(kind.type_):
            one = _sample(kind.type_)
        else:
            one = _VALUES[field.metadata["kafka_type"]]
        values[field.name] = (one, one) if kind.is_array else one
    return cls(**values)


def _served():
    return [(k, v) for k, (lo, hi) in SERVED_VERSIONS.items() for v in range(lo, hi + 1) if not (k == 0 and v < 3)]


def _encoded(api_key: int, version: int) -> bytes:
    cls = request_class(api_key, version)
    out = io.BytesIO()
    _writer(cls)(out, _sample(cls))
    return out.getvalue()


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    flexible = request_class(api_key, version).__flexible__
    return struct.pack(">hhih", api_key, version, 1, 1) + b"c" + (b"\x00" if flexible else b"") + body


@pytest.mark.parametrize("api_key,version", _served())
def test_walk_ends_exactly_where_kio_encoding_ends(api_key, version):
    body = _encoded(api_key, version)
    step, _min = _entity_step(request_class(api_key, version))
    assert step(body, 0, len(body)) == len(body)
    decode_request(_frame(api_key, version, body))  # and the real decoder agrees it is whole


@pytest.mark.parametrize("api_key,version", _served())
def test_truncated_bodies_are_peer_errors(api_key, version):
    body = _encoded(api_key, version)
    cls = request_class(api_key, version)
    for cut in range(len(body)):
        with pytest.raises(PeerProtocolError):
            check_request_body(cls, body[:cut], 0)


def test_the_counts_that_aborted_the_broker_are_refused():
    # Metadata v12 topics array and Produce v9 topic_data claiming 2^32-2 elements.
    with pytest.raises(PeerProtocolError, match="array of topics"):
        check_request_body(request_class(3, 12), bytes.fromhex("ffffffff0f"), 0)
    with pytest.raises(PeerProtocolError, match="array of topic_data"):
        check_request_body(request_class(0, 9), bytes.fromhex("00ffff00001388ffffffff0f"), 0)
    legacy = struct.pack(">hhii", -1, 1, 5000, 0x7FFFFFFF)  # Produce v3, topic_data count 2^31-1
    with pytest.raises(PeerProtocolError, match="array of topic_data"):
        check_request_body(request_class(0, 3), legacy, 0)


def test_nested_counts_are_checked_too():
    body = bytearray(_encoded(0, 9))
    # transactional_id "name", acks, timeout, topic_data count; then the first topic's name
    # (compact length 5 + "name") and its partition_data count, which becomes 2^32-2.
    at = body.index(b"\x05name", body.index(b"\x05name") + 1) + 5
    body[at:at + 1] = b""  # drop the partition_data count byte, put a huge count there
    body[at:at] = bytes.fromhex("ffffffff0f")
    with pytest.raises(PeerProtocolError, match="array of partition_data"):
        check_request_body(request_class(0, 9), bytes(body), 0)


# A byte replaced by: small values, and the largest compact (2^32-1) and legacy (2^31-1) counts.
_CORRUPTIONS = (b"\x00", b"\x7f", b"\xff", bytes.fromhex("ffffffff0f"), bytes.fromhex("7fffffff"))

_CHILD = r"""
import sys
from wire.protocol import decode_request
from wire.framing import PeerProtocolError
frames = sys.stdin.buffer.read().split(b"\n--frame--\n")
for frame in frames:
    try:
        decode_request(frame)
    except PeerProtocolError:
        pass
print(len(frames))
"""


# A child Python decoding 91,170 frames: 3.5 s of CPU, the unit tests' largest; make test runs it.
@pytest.mark.system
def test_every_corrupted_byte_is_safe_for_the_native_reader():
    frames = []
    for api_key, version in _served():
        frame = _frame(api_key, version, _encoded(api_key, version))
        start = len(frame) - len(_encoded(api_key, version))
        for i in range(start, len(frame)):
            for value in _CORRUPTIONS:
                frames.append(frame[:i] + value + frame[i + 1:])
    # The separator cannot be confused with frame contents: no sample field holds it.
    assert not any(b"\n--frame--\n" in f for f in frames)
    result = subprocess.run(
        [sys.executable, "-c", _CHILD], input=b"\n--frame--\n".join(frames),
        capture_output=True, timeout=240,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    assert int(result.stdout) == len(frames)


def _array_fields(cls):
    return [f for f in fields(cls) if classify_field(f).is_array]


def _nullable_array(field) -> bool:
    # Kafka's nullableVersions, as kio's generated types carry it: `tuple[X, ...] | None`.
    return get_origin(field.type) is UnionType and NoneType in get_args(field.type)


@pytest.mark.parametrize("api_key,version", _served())
def test_null_arrays_pass_only_where_the_schema_allows_null(api_key, version):
    # kio's array writers encode None as the null count whatever the schema says; kio's reader
    # would then hand the handler None for a field typed as a tuple.
    cls = request_class(api_key, version)
    for field in _array_fields(cls):
        entity = replace(_sample(cls), **{field.name: None})
        out = io.BytesIO()
        _writer(cls)(out, entity)
        if _nullable_array(field):
            _header, decoded = decode_request(_frame(api_key, version, out.getvalue()))
            assert getattr(decoded, field.name) is None
        else:
            with pytest.raises(PeerProtocolError, match=f"non-nullable field {field.name} was serialized as null"):
                decode_request(_frame(api_key, version, out.getvalue()))


def test_nested_null_arrays_are_refused_too():
    # Produce v9: topic_data[0].partition_data null.
    cls = request_class(0, 9)
    sample = _sample(cls)
    topic = replace(sample.topic_data[0], partition_data=None)
    out = io.BytesIO()
    _writer(cls)(out, replace(sample, topic_data=(topic,)))
    with pytest.raises(PeerProtocolError, match="non-nullable field partition_data was serialized as null"):
        check_request_body(cls, out.getvalue(), 0)


def test_find_coordinator_v6_with_null_keys_from_issue_13():
    frame = bytes.fromhex("0000000f000a00060000000100017800000000")[4:]
    with pytest.raises(PeerProtocolError, match="coordinator_keys was serialized as null"):
        decode_request(frame)
