"""wire/metadata_response.py writes exactly the bytes kio's generic writer writes, at every
version of MetadataResponse (kio's generated schema is the reference)."""

from __future__ import annotations

import datetime
import io
import sys
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from wire.metadata_response import BrokerEntry, PartitionEntry, TopicEntry, encode_metadata_response
from wire.protocol import response_class

VERSIONS = range(0, 14)
int32 = st.integers(-(2**31), 2**31 - 1)
node_lists = st.lists(st.integers(-1, 5), max_size=4)
error_codes = st.sampled_from([ErrorCode.none, ErrorCode.leader_not_available, ErrorCode.unknown_topic_or_partition])
names = st.text(min_size=1, max_size=12)

partitions = st.builds(PartitionEntry, error_codes, st.integers(0, 2**31 - 1), int32, int32, node_lists, node_lists,
                       node_lists)
topics = st.builds(TopicEntry, error_codes, names, st.one_of(st.none(), st.uuids()), st.booleans(),
                   st.lists(partitions, max_size=5), int32)
brokers = st.builds(BrokerEntry, int32, names, st.integers(0, 65535), st.one_of(st.none(), names))


def _kio_bytes(version: int, throttle, brokers_, cluster_id, controller_id, topics_, cluster_ops, error_code) -> bytes:
    cls = response_class(3, version)
    broker_cls = _nested(cls, "MetadataResponseBroker")
    topic_cls = _nested(cls, "MetadataResponseTopic")
    part_cls = _nested(cls, "MetadataResponsePartition")

    def build(kind, **values):
        return kind(**{k: v for k, v in values.items() if k in kind.__dataclass_fields__})

    body = build(
        cls, throttle_time=_timedelta(throttle),
        brokers=tuple(build(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack) for b in brokers_),
        cluster_id=cluster_id, controller_id=controller_id, cluster_authorized_operations=cluster_ops,
        error_code=ErrorCode(error_code),
        topics=tuple(build(
            topic_cls, error_code=ErrorCode(t.error_code), name=t.name,
            topic_id=t.topic_id if t.topic_id is not None else uuid.UUID(int=0), is_internal=t.is_internal,
            topic_authorized_operations=t.topic_authorized_operations,
            partitions=tuple(build(part_cls, error_code=ErrorCode(p.error_code), partition_index=p.partition_index,
                                   leader_id=p.leader_id, leader_epoch=p.leader_epoch,
                                   replica_nodes=tuple(p.replica_nodes), isr_nodes=tuple(p.isr_nodes),
                                   offline_replicas=tuple(p.offline_replicas)) for p in t.partitions))
            for t in topics_))
    buf = io.BytesIO()
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def _nested(cls, name: str):
    return getattr(sys.modules[cls.__module__], name)


def _timedelta(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)


@settings(max_examples=60, deadline=None)
@given(version=st.sampled_from(list(VERSIONS)), throttle=st.integers(0, 10_000), brokers_=st.lists(brokers, max_size=3),
       cluster_id=st.one_of(st.none(), names), controller_id=int32, topics_=st.lists(topics, max_size=4),
       cluster_ops=int32, error_code=error_codes)
def test_the_bytes_are_kios_at_every_version(version, throttle, brokers_, cluster_id, controller_id, topics_,
                                             cluster_ops, error_code):
    ours = encode_metadata_response(version, throttle, brokers_, cluster_id, controller_id, topics_, cluster_ops,
                                    int(error_code))
    assert ours == _kio_bytes(version, throttle, brokers_, cluster_id, controller_id, topics_, cluster_ops,
                              int(error_code))


def test_every_version_once_with_a_partition_of_each_shape():
    t = TopicEntry(0, "orders", uuid.uuid4(), False, [PartitionEntry(0, 0, 1, 7, [1, 2], [1], []),
                                                       PartitionEntry(5, 1, -1, -1, [], [], [2])], -2**31)
    b = [BrokerEntry(1, "localhost", 9092, None), BrokerEntry(2, "h", 9093, "r1")]
    for v in VERSIONS:
        assert encode_metadata_response(v, 0, b, "c", 1, [t], -2**31, 0) == _kio_bytes(v, 0, b, "c", 1, [t], -2**31, 0), v
