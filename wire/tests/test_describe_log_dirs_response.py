"""wire/describe_log_dirs_response.py writes exactly the bytes kio's generic writer writes, at
every version of DescribeLogDirsResponse the broker serves (kio's generated schema is the reference)."""

from __future__ import annotations

import datetime
import io
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from wire.describe_log_dirs_response import LogDirEntry, TopicEntry, encode_describe_log_dirs_response
from wire.protocol import response_class

VERSIONS = range(1, 6)
int64 = st.integers(-(2**63), 2**63 - 1)
error_codes = st.sampled_from([ErrorCode.none, ErrorCode.kafka_storage_error,
                               ErrorCode.cluster_authorization_failed]).map(int)
names = st.text(min_size=1, max_size=12)
partitions = st.tuples(st.integers(0, 2**31 - 1), int64, int64, st.booleans())
topics = st.builds(TopicEntry, names, st.lists(partitions, max_size=4))
dirs = st.builds(LogDirEntry, error_codes, names, st.lists(topics, max_size=3), int64, int64, st.booleans())


def _kio_bytes(version: int, throttle: int, error_code: int, results) -> bytes:
    cls = response_class(35, version)
    module = sys.modules[cls.__module__]
    result_cls, topic_cls, part_cls = (getattr(module, n) for n in (
        "DescribeLogDirsResult", "DescribeLogDirsTopic", "DescribeLogDirsPartition"))

    def build(kind, **values):
        return kind(**{k: v for k, v in values.items() if k in kind.__dataclass_fields__})

    body = build(
        cls, throttle_time=datetime.timedelta(milliseconds=throttle), error_code=ErrorCode(error_code),
        results=tuple(build(
            result_cls, error_code=ErrorCode(d.error_code), log_dir=d.log_dir, total_bytes=d.total_bytes,
            usable_bytes=d.usable_bytes, is_cordoned=d.is_cordoned,
            topics=tuple(topic_cls(name=t.name, partitions=tuple(
                part_cls(partition_index=i, partition_size=size, offset_lag=lag, is_future_key=future)
                for i, size, lag, future in t.partitions)) for t in d.topics))
            for d in results))
    buf = io.BytesIO()
    entity_writer(cls)(buf, body)
    return buf.getvalue()


@settings(max_examples=80, deadline=None)
@given(version=st.sampled_from(list(VERSIONS)), throttle=st.integers(0, 10_000), error_code=error_codes,
       results=st.lists(dirs, max_size=3))
def test_the_bytes_are_kios_at_every_version(version, throttle, error_code, results):
    assert encode_describe_log_dirs_response(version, throttle, error_code, results) == \
        _kio_bytes(version, throttle, error_code, results)


def test_every_version_once_with_each_shape():
    results = [LogDirEntry(0, "/data/segment", [TopicEntry("orders", [(0, 1024, 0, False), (1, 0, 5, True)])],
                           10**12, 10**11, True),
               LogDirEntry(0, "/data/commitlog-store", [], -1, -1, False)]
    for v in VERSIONS:
        assert encode_describe_log_dirs_response(v, 7, 0, results) == _kio_bytes(v, 7, 0, results), v
