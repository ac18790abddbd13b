"""The pure parts of the client commands: Kafka's key partitioner (cli_produce.murmur2) and the
consumer-protocol assignment reader (cli_groups.assigned_partitions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.consumer_protocol_assignment.v0.data import ConsumerProtocolAssignment, TopicPartition
from kio.serial import entity_writer

from broker.cli.groups import assigned_partitions
from broker.cli.produce import murmur2, murmur2_partition

# Kafka's UtilsTest.testMurmur2: the Java client's hashes, as signed ints.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key,expected", KAFKA_VECTORS.items())
def test_murmur2_is_kafkas(key, expected):
    assert murmur2(key) == expected & 0xFFFFFFFF


@given(st.binary(max_size=64), st.integers(1, 1000))
def test_partition_agrees_with_kafka_python(key, partitions):
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    assert murmur2_partition(key, partitions) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


class _Buffer(bytearray):
    def write(self, data) -> int:
        self += data
        return len(data)


@given(st.lists(st.tuples(st.text(min_size=1, max_size=20), st.lists(st.integers(0, 2**31 - 1), max_size=8)),
                max_size=5), st.one_of(st.none(), st.binary(max_size=10)))
def test_assignment_reads_what_kio_writes(topics, user_data):
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=tuple(TopicPartition(topic=t, partitions=tuple(ps)) for t, ps in topics),
        user_data=user_data)
    out = _Buffer(b"\x00\x00")  # the version prefix of a consumer-protocol message
    entity_writer(ConsumerProtocolAssignment)(out, assignment)
    assert assigned_partitions(bytes(out)) == [(t, p) for t, ps in topics for p in ps]


def test_assignment_that_does_not_parse_is_empty():
    assert assigned_partitions(b"\x00\x00\x00\x00\x00\x05\x00") == []
