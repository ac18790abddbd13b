"""Null arrays in requests: refused as Kafka refuses them, never a traceback.

Kafka's generated readers throw "non-nullable field X was serialized as null" for an array the
schema does not let be null; RequestContext.parseRequest turns that into an
InvalidRequestException and the socket server closes the connection. twinlog does the same
(wire/request_bounds.py) with one log line. An array the schema does let be null (Metadata
`topics` from v1, OffsetFetch `topics`, DescribeConfigs `configuration_keys`, ...) reaches the
handler, which must answer it.

The sweep covers every served (api, version) and every array field in it, top-level or nested:
each request is a schema sample (one element per array) with exactly that one array null.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from types import NoneType, UnionType
from typing import get_args, get_origin

from kio.schema.errors import ErrorCode
from kio.serial._introspect import classify_field, get_field_tag

from compat_tests.helpers.raw_kafka import RawKafka, decode_response, encode_body, encode_header, frame, request_class
from wire.protocol import SERVED_VERSIONS

CLOSE_WITHIN = 3.0
# The request from issue 13: FindCoordinator v6, client id "x", key_type 0, coordinator_keys null.
FIND_COORDINATOR_NULL_KEYS = bytes.fromhex("0000000f000a00060000000100017800000000")

_VALUES = {
    "bool": False, "int8": 0, "int16": 1, "uint16": 1, "int32": 1, "int64": 1, "float64": 0.5,
    "string": "null-array-sweep", "bytes": b"", "records": None, "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.none, "timedelta_i32": datetime.timedelta(milliseconds=100),
    "timedelta_i64": datetime.timedelta(milliseconds=100),
    "datetime_i64": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
}


def _nullable(field: dataclasses.Field) -> bool:
    return get_origin(field.type) is UnionType and NoneType in get_args(field.type)


def _sample(cls):
    """Every field set, every array with one element, tagged fields left at their defaults."""
    values = {}
    for field in dataclasses.fields(cls):
        if get_field_tag(field) is not None:
            continue
        kind = classify_field(field)
        one = _sample(kind.type_) if dataclasses.is_dataclass(kind.type_) else _VALUES[field.metadata["kafka_type"]]
        if one is None and not _nullable(field):
            one = b""
        values[field.name] = (one,) if kind.is_array else one
    return cls(**values)


def _null_variants(entity, path=()):
    """(dotted path, nullable, entity) for each array field of `entity`, at any depth, set to null.
    kio's array writers encode None as the null count whatever the schema says."""
    for field in dataclasses.fields(entity):
        if get_field_tag(field) is not None:
            continue
        kind = classify_field(field)
        value = getattr(entity, field.name)
        here = path + (field.name,)
        if kind.is_array:
            yield ".".join(here), _nullable(field), dataclasses.replace(entity, **{field.name: None})
        if dataclasses.is_dataclass(kind.type_) and value is not None:
            element = value[0] if kind.is_array else value
            for where, nullable, changed in _null_variants(element, here):
                new = (changed,) + tuple(value[1:]) if kind.is_array else changed
                yield where, nullable, dataclasses.replace(entity, **{field.name: new})


def _cases():
    for api_key, (lo, hi) in sorted(SERVED_VERSIONS.items()):
        for version in range(max(lo, 3) if api_key == 0 else lo, hi + 1):
            for where, nullable, entity in _null_variants(_sample(request_class(api_key, version))):
                yield api_key, version, where, nullable, entity


def _drain(conn: RawKafka) -> bytes | None:
    return conn.drain_until_closed(CLOSE_WITHIN)


def _served(conn: RawKafka) -> None:
    conn.send_bytes(frame(encode_header(18, 0, 77, "after")))
    correlation_id, body = decode_response(18, 0, conn.recv_payload())
    assert (correlation_id, body.error_code) == (77, ErrorCode.none)


def test_find_coordinator_v6_null_keys_closes_with_one_log_line(broker):
    since = broker.log_size()
    with RawKafka.to(broker) as bystander, RawKafka.to(broker) as bad:
        bad.send_bytes(FIND_COORDINATOR_NULL_KEYS)
        assert _drain(bad) == b"", "the broker answered or kept the connection open"
        _served(bystander)  # a connection opened before the bad request is still served
    with RawKafka.to(broker) as after:
        _served(after)
    said = broker.log_text(since).splitlines()
    assert not [line for line in said if "Traceback" in line], "\n".join(said)
    closing = [line for line in said if "closing connection" in line]
    assert len(closing) == 1 and "non-nullable field coordinator_keys was serialized as null" in closing[0], said


def test_every_array_nulled_in_every_served_request(broker):
    """Non-nullable: closed without a reply. Nullable: answered, and the connection stays open."""
    since = broker.log_size()
    refused, answered, wrong = 0, 0, []
    for api_key, version, where, nullable, entity in _cases():
        payload = frame(encode_header(api_key, version, 9, "null-sweep") + encode_body(entity))
        with RawKafka.to(broker) as conn:
            conn.send_bytes(payload)
            if not nullable:
                refused += 1
                if _drain(conn) != b"":
                    wrong.append(f"api {api_key} v{version} {where}: not closed without a reply")
                continue
            answered += 1
            try:
                correlation_id, _body = decode_response(api_key, version, conn.recv_payload(CLOSE_WITHIN))
                assert correlation_id == 9
                _served(conn)
            except (OSError, ConnectionError, AssertionError) as exc:
                wrong.append(f"api {api_key} v{version} {where} (nullable): {exc!r}")
    said = broker.log_text(since).splitlines()
    tracebacks = [line for line in said if "Traceback" in line]
    closing = [line for line in said if "closing connection" in line]
    assert not wrong, "\n".join(wrong[:40])
    assert not tracebacks, broker.log_tail(80, since)
    # broker/observability/log_rate_limit.py passes 200 lines of one template per minute (this module's first
    # test wrote one); the ones past it are counted into a summary a minute later.
    assert min(refused, 199) <= len(closing) <= refused
    assert all("was serialized as null" in line for line in closing)
    assert refused > 150 and answered >= 25  # the sweep really covered the schemas
