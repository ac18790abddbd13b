"""Every advertised version of the record-administration APIs, over a raw socket: DeleteRecords.

Checked through a second API afterwards: ListOffsets earliest answers the new log start, a
fetch below it is OFFSET_OUT_OF_RANGE, a fetch at it returns the batch holding it. The rules
are Kafka's (ReplicaManager.deleteRecords): -1 means the high watermark, beyond it is
OFFSET_OUT_OF_RANGE, internal topics are refused.
"""

from __future__ import annotations

from compat_tests.helpers.raw_kafka import Client, make_batch, read_records
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
POLICY_VIOLATION = 44
EARLIEST = -2


def delete_records(client: Client, version: int, topic: str, offsets: dict[int, int]) -> dict:
    """{partition: offset} -> {partition: (error code, low watermark)}."""
    r = client.request(21, version, timeout=10_000, topics=[{"name": topic, "partitions": [
        {"partition_index": p, "offset": o} for p, o in offsets.items()]}])
    (t,) = r.topics
    assert t.name == topic
    return {p.partition_index: (p.error_code, p.low_watermark) for p in t.partitions}


def earliest(client: Client, topic: str, partition: int) -> int:
    p = client.list_offset(topic, partition, EARLIEST)
    assert p.error_code == NONE
    return p.offset


@over_versions(21)
def test_delete_records(client, version):
    topic = unique_topic("delete-records")
    client.create_topic(topic, 2)
    for base in (0, 3, 6):  # three batches of three records in partition 0
        assert client.produce(topic, 0, make_batch([b"v%d" % (base + i) for i in range(3)])).base_offset == base
    assert client.produce(topic, 1, make_batch([b"one", b"two"])).base_offset == 0

    assert delete_records(client, version, topic, {0: 4, 1: -1}) == {0: (NONE, 4), 1: (NONE, 2)}
    assert earliest(client, topic, 0) == 4 and earliest(client, topic, 1) == 2
    assert client.fetch(topic, 0, 3).error_code == OFFSET_OUT_OF_RANGE
    at_start = client.fetch(topic, 0, 4)
    assert at_start.error_code == NONE and at_start.log_start_offset == 4
    # The whole batch holding offset 4 comes back; the client skips the record before it.
    assert [o for o, *_ in read_records(at_start.records)] == [3, 4, 5, 6, 7, 8]
    assert client.produce(topic, 1, make_batch([b"three"])).base_offset == 2

    # Below the log start: nothing changes, no error. Beyond the high watermark, or below -1: refused.
    assert delete_records(client, version, topic, {0: 1}) == {0: (NONE, 4)}
    assert delete_records(client, version, topic, {0: 10})[0][0] == OFFSET_OUT_OF_RANGE
    assert delete_records(client, version, topic, {0: -7})[0][0] == OFFSET_OUT_OF_RANGE
    assert earliest(client, topic, 0) == 4
    assert delete_records(client, version, topic, {5: 0})[5][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert delete_records(client, version, unique_topic("nowhere"), {0: 0})[0][0] == UNKNOWN_TOPIC_OR_PARTITION


@over_versions(21)
def test_delete_records_refused_for_compacted_and_internal_topics(client, version):
    compacted = unique_topic("compacted")
    client.create_topic(compacted, 1, {"cleanup.policy": "compact"})
    assert client.produce(compacted, 0, make_batch([b"v"], keys=[b"k"])).base_offset == 0  # keyed: compacted
    assert delete_records(client, version, compacted, {0: 1})[0][0] == POLICY_VIOLATION
    assert earliest(client, compacted, 0) == 0
    # __consumer_offsets exists once a coordinator was looked up.
    assert client.request(10, 3, key="any-group", key_type=0).error_code == NONE
    assert delete_records(client, version, "__consumer_offsets", {0: 0})[0][0] == INVALID_TOPIC_EXCEPTION
