"""Every advertised version of the admin APIs Kafka's tools and UIs call, over a raw socket:
AlterConfigs, IncrementalAlterConfigs, DescribeLogDirs, OffsetDelete, DescribeTopicPartitions,
ListConfigResources.

Each change is checked through another API afterwards: DescribeConfigs shows the new overrides,
Produce / ListOffsets show them taking effect on the live log (max.message.bytes,
min.insync.replicas, segment.bytes + retention.ms), OffsetFetch shows the deleted offsets,
and a restart shows what was written to disk (topics.json, the __consumer_offsets tombstone).
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

from compat_tests.helpers.group_requests import offset_delete
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
NOT_ENOUGH_REPLICAS = 19
INVALID_REQUEST = 42
INVALID_CONFIG = 40
UNSUPPORTED_VERSION = 35
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
GROUP_SUBSCRIBED_TO_TOPIC = 86
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
EARLIEST = -2
BROKER_ARGS = ["--retention-check-ms", "300", "--group-initial-rebalance-delay-ms", "0",
           "--offsets-topic-partitions", "3"]


def described(client: Client, topic: str) -> dict[str, tuple[str, bool]]:
    """DescribeConfigs: {name: (value, is_default)}."""
    r = client.request(32, 4, include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": TOPIC, "resource_name": topic, "configuration_keys": None}])
    (res,) = r.results
    assert res.error_code == NONE, res
    return {c.name: (c.value, c.config_source == 5) for c in res.configs}


def incremental(client: Client, version: int, resources: list[tuple[int, str, list]], validate_only=False) -> list:
    """IncrementalAlterConfigs [(type, name, [(key, op, value)])] -> [(error code, message)]."""
    r = client.request(44, version, validate_only=validate_only, resources=[
        {"resource_type": t, "resource_name": n,
         "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}
        for t, n, ops in resources])
    assert [(x.resource_type, x.resource_name) for x in r.responses] == [(t, n) for t, n, _ in resources]
    return [(x.error_code, x.error_message) for x in r.responses]


def alter(client: Client, version: int, resources: list[tuple[int, str, dict]], validate_only=False) -> list:
    """AlterConfigs [(type, name, {key: value})] -> [error code]."""
    r = client.request(33, version, validate_only=validate_only, resources=[
        {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in c.items()]}
        for t, n, c in resources])
    return [x.error_code for x in r.responses]


@over_versions(44)
def test_incremental_alter_configs(broker, client, version):
    topic = unique_topic("incr")
    client.create_topic(topic, 1)
    ops = [("retention.ms", SET, "86400000"), ("cleanup.policy", APPEND, "compact"),
           ("max.message.bytes", SET, "200")]
    assert incremental(client, version, [(TOPIC, topic, ops)], validate_only=True) == [(NONE, None)]
    assert described(client, topic)["retention.ms"][1], "validate_only changed the topic"
    assert incremental(client, version, [(TOPIC, topic, ops)]) == [(NONE, None)]
    configs = described(client, topic)
    assert configs["retention.ms"] == ("86400000", False)
    assert configs["cleanup.policy"] == ("delete,compact", False)  # APPEND starts from the default
    # The live log takes it at once: a 500-byte batch is now too large.
    assert client.produce(topic, 0, make_batch([b"x" * 500])).error_code == MESSAGE_TOO_LARGE
    assert incremental(client, version, [(TOPIC, topic, [
        ("cleanup.policy", SUBTRACT, "delete"), ("max.message.bytes", DELETE, None)])]) == [(NONE, None)]
    configs = described(client, topic)
    assert configs["cleanup.policy"] == ("compact", False) and configs["max.message.bytes"][1]
    # A keyed batch: the topic is compacted now, and a compacted topic refuses keyless records.
    assert client.produce(topic, 0, make_batch([b"x" * 500], keys=[b"k"])).error_code == NONE

    # Refusals change nothing: the valid operation beside a bad one is not applied either.
    bad = {
        INVALID_CONFIG: [[("retention.ms", APPEND, "5")], [("no.such.config", SET, "1")],
                         [("segment.bytes", SET, "2000"), ("retention.ms", SET, "-5")],
                         [("storage.mode", SET, "segment" if broker.storage_mode == "commitlog" else "commitlog")]],
        INVALID_REQUEST: [[("segment.bytes", SET, "2000"), ("segment.bytes", SET, "3000")]],
    }
    for code, cases in bad.items():
        for case in cases:
            assert incremental(client, version, [(TOPIC, topic, case)])[0][0] == code, case
    assert described(client, topic)["segment.bytes"][1]
    missing = unique_topic("missing")
    assert incremental(client, version, [(TOPIC, missing, [("retention.ms", SET, "1")])])[0][0] == UNKNOWN_TOPIC_OR_PARTITION
    # A resource named twice: both refused. Broker settings other than the topic defaults are fixed
    # at start-up: refused as Kafka refuses a config it cannot update dynamically.
    twice = [(TOPIC, topic, [("retention.ms", SET, "1000")])] * 2
    assert [c for c, _ in incremental(client, version, twice)] == [INVALID_REQUEST, INVALID_REQUEST]
    code, message = incremental(client, version, [(BROKER, "1", [("log.cleaner.threads", SET, "2")])])[0]
    assert code == INVALID_REQUEST and "dynamically" in message
    assert incremental(client, version, [(BROKER, "", [])]) == [(NONE, None)]
    assert described(client, topic)["retention.ms"] == ("86400000", False)


@over_versions(33)
def test_alter_configs(client, version):
    topic = unique_topic("alter")
    client.create_topic(topic, 1, {"retention.ms": "3600000"})
    assert alter(client, version, [(TOPIC, topic, {"cleanup.policy": "compact", "min.insync.replicas": "2"})],
                 validate_only=True) == [NONE]
    assert described(client, topic)["retention.ms"] == ("3600000", False)
    assert alter(client, version, [(TOPIC, topic, {"cleanup.policy": "compact", "min.insync.replicas": "2"})]) == [NONE]
    configs = described(client, topic)
    # The whole set is replaced: retention.ms, not named, is back to its default.
    assert configs["cleanup.policy"] == ("compact", False) and configs["retention.ms"][1]
    assert configs["min.insync.replicas"] == ("2", False)
    # min.insync.replicas 2 on a partition whose ISR is one broker: acks=all is refused now.
    assert client.produce(topic, 0, make_batch([b"v"]), acks=-1).error_code == NOT_ENOUGH_REPLICAS
    assert client.produce(topic, 0, make_batch([b"v"], keys=[b"k"]), acks=1).error_code == NONE
    assert alter(client, version, [(TOPIC, topic, {"retention.ms": None})]) == [INVALID_CONFIG]
    assert alter(client, version, [(TOPIC, topic, {"retention.ms": "soon"})]) == [INVALID_CONFIG]
    assert alter(client, version, [(BROKER, "1", {"num.partitions": "3"})]) == [INVALID_REQUEST]
    assert alter(client, version, [(TOPIC, topic, {})]) == [NONE]
    assert client.produce(topic, 0, make_batch([b"v"]), acks=-1).error_code == NONE
    assert all(is_default for name, (_, is_default) in described(client, topic).items() if name != "storage.mode")


def test_config_changes_reach_the_live_log_and_survive_a_restart(broker_factory):
    """segment.bytes rolls the next batches, retention.ms then deletes the closed segments
    (retention checks every 300 ms); after a restart topics.json has the overrides."""
    fresh_broker = broker_factory(*BROKER_ARGS)
    topic = unique_topic("live")
    with Client.to(fresh_broker) as client:
        client.create_topic(topic, 1)
        assert incremental(client, 1, [(TOPIC, topic, [("segment.bytes", SET, "100")])]) == [(NONE, None)]
        for i in range(4):
            assert client.produce(topic, 0, make_batch([b"%d" % i * 40])).base_offset == i
        assert client.list_offset(topic, 0, EARLIEST).offset == 0
        assert incremental(client, 1, [(TOPIC, topic, [("retention.ms", SET, "1")])]) == [(NONE, None)]
        start = wait_until(lambda: client.list_offset(topic, 0, EARLIEST).offset, "retention moving the log start",
                           timeout=10)
        assert start >= 3  # every closed segment expired
    fresh_broker.restart()
    with Client.to(fresh_broker) as client:
        configs = described(client, topic)
        assert configs["segment.bytes"] == ("100", False) and configs["retention.ms"] == ("1", False)


@over_versions(35)
def test_describe_log_dirs(broker, client, version):
    topic = unique_topic("logdirs")
    client.create_topic(topic, 2)
    batch = make_batch([b"a" * 100, b"b" * 50])
    assert client.produce(topic, 0, batch).base_offset == 0
    r = client.request(35, version, topics=[{"topic": topic, "partitions": [0, 1, 7]}])
    assert getattr(r, "error_code", NONE) == NONE
    sizes, dirs = {}, []
    for result in r.results:
        assert result.error_code == NONE and result.log_dir.startswith("/")
        dirs.append(result.log_dir)
        if version >= 4:
            assert result.total_bytes >= result.usable_bytes > 0
        if version >= 5:  # KIP-1066: no cordoning here, so no dir is cordoned
            assert result.is_cordoned is False
        for t in result.topics:
            assert t.name == topic
            for p in t.partitions:
                sizes[p.partition_index] = (result.log_dir, p.partition_size, p.offset_lag, p.is_future_key)
    assert set(sizes) == {0, 1}  # partition 7 does not exist: left out
    data_dir = Path(broker.data_dir).resolve()  # both layouts' dirs, empty or not, as Kafka's log.dirs
    assert sorted(dirs) == [str(data_dir), str(data_dir / "commitlog-store")]
    log_dir = sizes[0][0]
    assert log_dir.endswith("commitlog-store") == (broker.storage_mode == "commitlog")
    assert sizes[0][1:] == (log_dir, len(batch), 0, False)[1:] and sizes[1][1] == 0
    everything = client.request(35, version, topics=None)
    assert topic in {t.name for res in everything.results for t in res.topics}


def _subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v1: version | topics | user data (null) | owned partitions."""
    out = struct.pack(">hi", 1, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">ii", -1, 0)


def _commit(client, group, offsets, generation=-1, member_id=""):
    by_topic = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                           "committed_leader_epoch": -1, "committed_metadata": ""})
    r = client.request(8, 9, group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                       group_instance_id=None, retention_time=-1,
                       topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])
    assert all(p.error_code == NONE for t in r.topics for p in t.partitions), r


def _committed(client, group, topic, partitions) -> dict[int, int]:
    r = client.request(9, 9, require_stable=False, groups=[{"group_id": group, "member_id": None, "member_epoch": -1,
                                                            "topics": [{"name": topic, "partition_indexes": partitions}]}])
    return {p.partition_index: p.committed_offset for t in r.groups[0].topics for p in t.partitions}


def _stable_member(client, group, protocol_type, metadata):
    values = dict(group_id=group, session_timeout=30_000, rebalance_timeout=30_000, member_id="",
                  group_instance_id=None, protocol_type=protocol_type, reason=None,
                  protocols=[{"name": "range", "metadata": metadata}])
    j = client.request(11, 9, **values)
    j = client.request(11, 9, **{**values, "member_id": j.member_id})
    assert j.error_code == NONE, j
    s = client.request(14, 5, group_id=group, generation_id=j.generation_id, member_id=j.member_id,
                       group_instance_id=None, protocol_type=protocol_type, protocol_name="range",
                       assignments=[{"member_id": j.member_id, "assignment": b""}])
    assert s.error_code == NONE, s
    return j.member_id, j.generation_id


@over_versions(47)
def test_offset_delete(client, version):
    consumed, other = unique_topic("consumed"), unique_topic("other")
    client.create_topic(consumed, 2)
    client.create_topic(other, 1)
    simple = f"g-{uuid.uuid4().hex[:10]}"
    assert client.request(10, 4, key_type=0, coordinator_keys=[simple]).coordinators[0].error_code == NONE
    _commit(client, simple, {(consumed, 0): 5, (consumed, 1): 7})
    assert offset_delete(client, version, simple, {consumed: [0, 3]}) == (NONE, {(consumed, 0): NONE, (consumed, 3): NONE})
    assert _committed(client, simple, consumed, [0, 1]) == {0: -1, 1: 7}
    assert offset_delete(client, version, f"g-{uuid.uuid4().hex[:10]}", {consumed: [0]}) == (GROUP_ID_NOT_FOUND, {})

    # A consumer group subscribed to `consumed`: its offsets there stay, the other topic's go.
    active = f"g-{uuid.uuid4().hex[:10]}"
    member, generation = _stable_member(client, active, "consumer", _subscription(consumed))
    _commit(client, active, {(consumed, 0): 3, (other, 0): 4}, generation, member)
    code, errors = offset_delete(client, version, active, {consumed: [0], other: [0]})
    assert (code, errors) == (NONE, {(consumed, 0): GROUP_SUBSCRIBED_TO_TOPIC, (other, 0): NONE})
    assert _committed(client, active, consumed, [0]) == {0: 3} and _committed(client, active, other, [0]) == {0: -1}
    # A group of another protocol type with members: NON_EMPTY_GROUP.
    connect = f"g-{uuid.uuid4().hex[:10]}"
    _stable_member(client, connect, "connect", b"\x00\x01")
    assert offset_delete(client, version, connect, {other: [0]}) == (NON_EMPTY_GROUP, {})


def test_offset_delete_is_a_tombstone_in_consumer_offsets(broker_factory):
    """The deletion is written: after a restart (the offsets replayed from __consumer_offsets)
    the deleted offset stays deleted."""
    fresh_broker = broker_factory(*BROKER_ARGS)
    topic, group = unique_topic("tomb"), f"g-{uuid.uuid4().hex[:10]}"
    with Client.to(fresh_broker) as client:
        client.create_topic(topic, 2)
        assert client.request(10, 4, key_type=0, coordinator_keys=[group]).coordinators[0].error_code == NONE
        _commit(client, group, {(topic, 0): 11, (topic, 1): 12})
        assert offset_delete(client, 0, group, {topic: [1]})[0] == NONE
    fresh_broker.restart()
    with Client.to(fresh_broker) as client:
        assert _committed(client, group, topic, [0, 1]) == {0: 11, 1: -1}


@over_versions(75)
def test_describe_topic_partitions_pages(client, version):
    prefix = f"dtp-{uuid.uuid4().hex[:8]}"
    a, b, missing = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c-missing"
    client.create_topic(a, 3)
    client.create_topic(b, 2)

    def page(limit, cursor=None, names=(b, a, missing)):
        r = client.request(75, version, topics=[{"name": n} for n in names], response_partition_limit=limit,
                           cursor=cursor)
        got = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in r.topics]
        nxt = None if r.next_cursor is None else (r.next_cursor.topic_name, r.next_cursor.partition_index)
        return got, nxt, r

    got, nxt, r = page(2)
    assert (got, nxt) == ([(a, NONE, [0, 1])], (a, 2))
    p = r.topics[0].partitions[0]
    assert (p.leader_id, p.replica_nodes, p.isr_nodes, p.error_code) == (1, (1,), (1,), NONE)
    assert r.topics[0].topic_id is not None and not r.topics[0].is_internal
    got, nxt, _ = page(2, {"topic_name": a, "partition_index": 2})
    assert (got, nxt) == ([(a, NONE, [2]), (b, NONE, [0])], (b, 1))
    got, nxt, _ = page(2, {"topic_name": b, "partition_index": 1})
    assert (got, nxt) == ([(b, NONE, [1]), (missing, UNKNOWN_TOPIC_OR_PARTITION, [])], None)
    # The limit used up exactly at a topic's end: the cursor names the next topic at 0.
    assert page(3)[:2] == ([(a, NONE, [0, 1, 2])], (b, 0))
    # A cursor on a topic the list lacks is refused.
    got, nxt, _ = page(10, {"topic_name": f"{prefix}-zz", "partition_index": 0}, names=(a,))
    assert (got, nxt) == ([(a, INVALID_REQUEST, [])], None)
    # No names: every topic, in name order, from the cursor's.
    got, _, _ = page(2000, {"topic_name": a, "partition_index": 1}, names=())
    assert got[:2] == [(a, NONE, [1, 2]), (b, NONE, [0, 1])]


@over_versions(74)
def test_list_config_resources(client, version):
    topic = unique_topic("listcfg")
    client.create_topic(topic, 1)
    r = client.request(74, version, resource_types=[])
    assert r.error_code == NONE
    listed = {(c.resource_name, getattr(c, "resource_type", 16)) for c in r.config_resources}
    if version == 0:  # ListClientMetricsResources: this broker keeps none
        assert listed == set()
        return
    assert (topic, TOPIC) in listed and ("1", BROKER) in listed
    only_topics = client.request(74, version, resource_types=[TOPIC])
    assert {c.resource_type for c in only_topics.config_resources} == {TOPIC}
    assert client.request(74, version, resource_types=[16, 32]).config_resources == ()
    assert client.request(74, version, resource_types=[99]).error_code == UNSUPPORTED_VERSION
