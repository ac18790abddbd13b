"""wire/produce_response.py writes exactly the bytes kio's generic writer writes, at every version
of ProduceResponse the broker serves (kio's generated schema is the reference), with the leader
hint fields at their defaults, as the produce handler leaves them when no partition names one."""

from __future__ import annotations

import datetime
import io
import sys
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from wire.produce_response import PartitionAnswer, encode_produce_response
from wire.protocol import response_class

VERSIONS = range(3, 14)
int64 = st.integers(-(2**63), 2**63 - 1)
error_codes = st.sampled_from([ErrorCode.none, ErrorCode.invalid_record, ErrorCode.corrupt_message,
                               ErrorCode.invalid_txn_state])
messages = st.one_of(st.none(), st.text(max_size=20))
answers = st.builds(PartitionAnswer, st.integers(0, 2**31 - 1), error_codes.map(int), int64,
                    st.one_of(st.just(-1), st.integers(0, 2**42)), int64,
                    st.lists(st.tuples(st.integers(0, 2**31 - 1), messages), max_size=3), messages)
topics = st.tuples(st.text(min_size=1, max_size=12), st.uuids(), st.lists(answers, max_size=4))


def _kio_bytes(version: int, topics_) -> bytes:
    cls = response_class(0, version)
    topic_cls, part_cls = _nested(cls, "TopicProduceResponse"), _nested(cls, "PartitionProduceResponse")
    error_cls = _nested(cls, "BatchIndexAndErrorMessage")
    leader_cls = _nested(cls, "LeaderIdAndEpoch")

    def build(kind, **values):
        return kind(**{k: v for k, v in values.items() if k in kind.__dataclass_fields__})

    def append_time(ms: int):
        return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)

    body = build(cls, throttle_time=datetime.timedelta(0), node_endpoints=(), responses=tuple(
        build(topic_cls, name=name, topic_id=topic_id, partition_responses=tuple(
            build(part_cls, index=a.index, error_code=ErrorCode(a.error_code), base_offset=a.base_offset,
                  log_append_time=append_time(a.log_append_time_ms), log_start_offset=a.log_start_offset,
                  record_errors=tuple(build(error_cls, batch_index=i, batch_index_error_message=m)
                                      for i, m in a.record_errors) if error_cls is not None else (),
                  error_message=a.error_message, current_leader=leader_cls() if leader_cls is not None else None)
            for a in parts))
        for name, topic_id, parts in topics_))
    buf = io.BytesIO()
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def _nested(cls, name: str):
    return getattr(sys.modules[cls.__module__], name, None)


def _ours(version: int, topics_) -> bytes:
    keyed = [(topic_id if version >= 13 else name, parts) for name, topic_id, parts in topics_]
    return encode_produce_response(version, keyed, []).data


@settings(max_examples=80, deadline=None)
@given(version=st.sampled_from(list(VERSIONS)), topics_=st.lists(topics, max_size=3))
def test_the_bytes_are_kios_at_every_version(version, topics_):
    if version < 8:  # no record errors or message before v8: kio has no field to hold them
        topics_ = [(n, i, [a._replace(record_errors=[], error_message=None) for a in parts]) for n, i, parts in topics_]
    assert _ours(version, topics_) == _kio_bytes(version, topics_)


def test_every_version_once_and_the_throttle_position():
    parts = [PartitionAnswer(0, 0, 41, -1, 0, [], None),
             PartitionAnswer(3, int(ErrorCode.invalid_record), -1, -1, -1, [(2, "no key")], "bad record")]
    for v in VERSIONS:
        shown = [("orders", uuid.UUID(int=7), parts if v >= 8 else parts[:1])]
        failed = [("orders", 3, ErrorCode.invalid_record)] if v >= 8 else []
        encoded = encode_produce_response(v, [(t if v < 13 else i, p) for t, i, p in shown], failed)
        assert encoded.data == _kio_bytes(v, shown), v
        throttled = encoded.with_throttle(250)
        assert throttled.data != encoded.data and int.from_bytes(throttled.data[encoded.throttle_at:][:4], "big") == 250
        # what the metrics read of it survives the throttle's patch
        assert throttled.failed == failed and throttled.errors == [code for *_, code in failed]
