"""Every advertised version of the topic and cluster APIs, over a raw socket: CreateTopics,
DeleteTopics, CreatePartitions, DescribeConfigs, DescribeCluster, InitProducerId.

Split from test_protocol_versions.py (which keeps ApiVersions, Metadata, Produce, Fetch and
ListOffsets); the same rules hold: versions come from SERVED_VERSIONS through
served_versions.over_versions, and each test checks state through a second API afterwards.
"""

from __future__ import annotations

import datetime
import uuid

from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
INVALID_REQUEST = 42
UNKNOWN_TOPIC_ID = 100

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
CONFIG_TYPE_LONG, CONFIG_TYPE_LIST = 5, 7
ZERO_UUID = uuid.UUID(int=0)
NO_THROTTLE = datetime.timedelta(0)


def node_id_of(client: Client) -> int:
    (b,) = client.metadata([]).brokers
    return b.node_id


# --- CreateTopics --------------------------------------------------------------------------

def _create(client, version, topics, validate_only=False):
    specs = [{"name": n, "num_partitions": parts, "replication_factor": rf, "assignments": [],
              "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}
             for n, parts, rf, configs in topics]
    r = client.request(19, version, topics=specs, timeout=10_000, validate_only=validate_only)
    assert r.throttle_time == NO_THROTTLE
    return r.topics


def _exists(client, name) -> bool:
    (t,) = client.metadata([name]).topics
    assert t.error_code in (NONE, UNKNOWN_TOPIC_OR_PARTITION), t
    return t.error_code == NONE


@over_versions(19)
def test_create_topics(client, version):
    name = unique_topic("create")
    (t,) = _create(client, version, [(name, 3, 1, {"retention.ms": "123456", "max.message.bytes": "5000"})])
    assert (t.name, t.error_code) == (name, NONE), t
    if version >= 5:
        assert (t.num_partitions, t.replication_factor) == (3, 1)
        assert t.topic_config_error_code == NONE
        echoed = {c.name: c for c in t.configs}
        assert echoed["retention.ms"].value == "123456"
        assert echoed["retention.ms"].config_source == DYNAMIC_TOPIC_CONFIG
        assert echoed["max.message.bytes"].value == "5000"
        assert echoed["cleanup.policy"].value == "delete"
        assert echoed["cleanup.policy"].config_source == DEFAULT_CONFIG
    (md,) = client.metadata([name]).topics
    assert md.error_code == NONE and len(md.partitions) == 3
    if version >= 7:
        assert t.topic_id not in (None, ZERO_UUID) and t.topic_id == md.topic_id
    # The configs are in force: DescribeConfigs reports them.
    r = client.request(32, 4, resources=[{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                          "configuration_keys": ["retention.ms"]}],
                       include_synonyms=False, include_documentation=False)
    (res,) = r.results
    assert [(c.name, c.value) for c in res.configs] == [("retention.ms", "123456")]


@over_versions(19)
def test_create_topics_validate_only(client, version):
    name = unique_topic("create-validate")
    (t,) = _create(client, version, [(name, 4, 1, {"retention.ms": "1000"})], validate_only=True)
    assert (t.name, t.error_code) == (name, NONE), t
    if version >= 5:
        assert t.num_partitions == 4
        assert {c.name: c.value for c in t.configs}["retention.ms"] == "1000"
    assert not _exists(client, name), "validate_only created the topic"
    (t,) = _create(client, version, [(name, 4, 2, None)], validate_only=True)
    assert t.error_code == INVALID_REPLICATION_FACTOR


@over_versions(19)
def test_create_topics_errors(client, version):
    existing, dup = unique_topic("create-exists"), unique_topic("create-dup")
    rf2, bad_cfg, unknown_cfg, zero = (unique_topic(p) for p in ("create-rf2", "create-badcfg",
                                                                  "create-unkcfg", "create-zero"))
    client.create_topic(existing)
    results = _create(client, version, [
        (existing, 1, 1, None),
        ("bad name!", 1, 1, None),
        ("x" * 250, 1, 1, None),
        (rf2, 1, 2, None),
        (bad_cfg, 1, 1, {"retention.ms": "not-a-number"}),
        (unknown_cfg, 1, 1, {"no.such.config": "1"}),
        (zero, 0, 1, None),
        (dup, 1, 1, None),
        (dup, 1, 1, None),
    ])
    codes: dict[str, set] = {}
    for t in results:
        codes.setdefault(t.name, set()).add(int(t.error_code))
        if version >= 5 and t.error_code != NONE:
            assert t.num_partitions == -1 and t.replication_factor == -1
    assert codes == {
        existing: {TOPIC_ALREADY_EXISTS},
        "bad name!": {INVALID_TOPIC_EXCEPTION},
        "x" * 250: {INVALID_TOPIC_EXCEPTION},
        rf2: {INVALID_REPLICATION_FACTOR},
        bad_cfg: {INVALID_CONFIG},
        unknown_cfg: {INVALID_CONFIG},
        zero: {INVALID_PARTITIONS},
        dup: {INVALID_REQUEST},
    }
    for name in (rf2, bad_cfg, unknown_cfg, zero, dup):
        assert not _exists(client, name), f"failed create of {name} left a topic behind"


# --- DeleteTopics --------------------------------------------------------------------------

def _delete(client, version, names=(), ids=()):
    if version < 6:
        assert not ids
        r = client.request(20, version, topic_names=list(names), timeout=10_000)
    else:
        r = client.request(20, version, timeout=10_000, topics=[{"name": n, "topic_id": ZERO_UUID} for n in names]
                           + [{"name": None, "topic_id": i} for i in ids])
    assert r.throttle_time == NO_THROTTLE
    return r.responses


@over_versions(20)
def test_delete_topics_by_name(client, version):
    name, missing = unique_topic("delete"), unique_topic("delete-missing")
    topic_id = client.create_topic(name)
    client.produced(name, 0, make_batch([b"gone", b"soon"]))
    results = {r.name: r for r in _delete(client, version, [name, missing])}
    assert set(results) == {name, missing}
    assert results[name].error_code == NONE
    assert results[missing].error_code == UNKNOWN_TOPIC_OR_PARTITION
    if version >= 6:
        assert results[name].topic_id == topic_id
    assert not _exists(client, name)
    # Re-created under the same name, it starts empty.
    new_id = client.create_topic(name)
    assert new_id != topic_id
    assert client.log_end_offset(name) == 0


@over_versions(20, lo=6)
def test_delete_topics_by_id(client, version):
    name = unique_topic("delete-id")
    topic_id = client.create_topic(name)
    (r,) = _delete(client, version, ids=[topic_id])
    assert (r.name, r.topic_id, r.error_code) == (name, topic_id, NONE)
    assert not _exists(client, name)
    unknown = uuid.uuid4()
    (r,) = _delete(client, version, ids=[unknown])
    assert (r.topic_id, r.error_code) == (unknown, UNKNOWN_TOPIC_ID)


@over_versions(20, lo=6)
def test_delete_topics_neither_name_nor_id(client, version):
    """A v6 entry naming no topic (null name, zero id) is INVALID_REQUEST, as Kafka's controller
    answers it; the request's other topics are deleted all the same."""
    name = unique_topic("delete-beside")
    client.create_topic(name)
    r = client.request(20, version, timeout=10_000, topics=[{"name": None, "topic_id": ZERO_UUID},
                                                            {"name": name, "topic_id": ZERO_UUID}])
    neither, named = r.responses
    assert (neither.name, neither.topic_id, neither.error_code) == (None, None, INVALID_REQUEST)  # zero id: kio's None
    assert neither.error_message == "Neither topic name nor id were specified."
    assert (named.name, named.error_code) == (name, NONE)
    assert not _exists(client, name)


@over_versions(20)
def test_delete_topics_duplicate_names(client, version):
    """A name asked for twice is INVALID_REQUEST, answered once, and its topic stays (Kafka's
    ControllerApis.deleteTopics screens the request before deleting anything)."""
    twice, once = unique_topic("delete-twice"), unique_topic("delete-once")
    client.create_topic(twice)
    client.create_topic(once)
    results = _delete(client, version, [twice, once, twice])
    assert [(r.name, r.error_code) for r in results] == [(twice, INVALID_REQUEST), (once, NONE)]
    if version >= 5:  # DeleteTopics answers carry a message from v5
        assert results[0].error_message == "Duplicate topic name."
    assert _exists(client, twice)
    assert not _exists(client, once)


@over_versions(20, lo=6)
def test_delete_topics_by_id_screened(client, version):
    """v6 entries that name a topic twice, or both ways, are INVALID_REQUEST and delete nothing,
    as in Kafka: both a name and an id in one entry; one id twice; a name whose id is also asked
    for (one answer for both)."""
    both, by_id, named = unique_topic("delete-both"), unique_topic("delete-id-twice"), unique_topic("delete-named")
    both_id, twice_id, named_id = (client.create_topic(n) for n in (both, by_id, named))
    r = client.request(20, version, timeout=10_000, topics=[
        {"name": both, "topic_id": both_id},
        {"name": None, "topic_id": twice_id}, {"name": None, "topic_id": twice_id},
        {"name": None, "topic_id": named_id}, {"name": named, "topic_id": ZERO_UUID}])
    got = [(x.name, x.topic_id, x.error_code, x.error_message) for x in r.responses]
    assert got == [(both, both_id, INVALID_REQUEST, "You may not specify both topic name and topic id."),
                   (None, twice_id, INVALID_REQUEST, "Duplicate topic id."),
                   (named, named_id, INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.")]
    for name in (both, by_id, named):
        assert _exists(client, name)


# --- CreatePartitions ----------------------------------------------------------------------

@over_versions(37)
def test_create_partitions(client, version):
    name, missing = unique_topic("partitions"), unique_topic("partitions-missing")
    client.create_topic(name, 1)

    def grow(topic, count, validate_only=False):
        r = client.request(37, version, topics=[{"name": topic, "count": count, "assignments": None}],
                           timeout=10_000, validate_only=validate_only)
        assert r.throttle_time == NO_THROTTLE
        (res,) = r.results
        assert res.name == topic
        return res.error_code

    def count():
        (t,) = client.metadata([name]).topics
        return len(t.partitions)

    assert grow(name, 5, validate_only=True) == NONE
    assert count() == 1
    assert grow(name, 3) == NONE
    assert count() == 3
    assert client.produced(name, 2, make_batch([b"new partition"])) == 0
    assert grow(name, 2) == INVALID_PARTITIONS
    assert grow(name, 3) == INVALID_PARTITIONS
    assert count() == 3
    assert grow(missing, 2) == UNKNOWN_TOPIC_OR_PARTITION


# --- DescribeConfigs -----------------------------------------------------------------------

@over_versions(32)
def test_describe_configs(broker, client, version):
    name, missing = unique_topic("configs"), unique_topic("configs-missing")
    client.create_topic(name, 1, {"retention.ms": "98765"})
    node = node_id_of(client)
    r = client.request(32, version, include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": TOPIC_RESOURCE, "resource_name": name, "configuration_keys": None},
        {"resource_type": TOPIC_RESOURCE, "resource_name": name, "configuration_keys": ["retention.ms"]},
        {"resource_type": BROKER_RESOURCE, "resource_name": str(node), "configuration_keys": None},
        {"resource_type": TOPIC_RESOURCE, "resource_name": missing, "configuration_keys": None},
    ])
    assert r.throttle_time == NO_THROTTLE
    full, filtered, brk, unknown = r.results

    assert (full.error_code, full.resource_type, full.resource_name) == (NONE, TOPIC_RESOURCE, name)
    cfg = {c.name: c for c in full.configs}
    assert cfg["retention.ms"].value == "98765"
    assert cfg["retention.ms"].read_only is False and cfg["retention.ms"].is_sensitive is False
    assert cfg["retention.ms"].config_source == DYNAMIC_TOPIC_CONFIG
    assert cfg["cleanup.policy"].value == "delete"
    assert cfg["cleanup.policy"].config_source == DEFAULT_CONFIG
    if version >= 3:
        assert cfg["retention.ms"].config_type == CONFIG_TYPE_LONG
        assert cfg["cleanup.policy"].config_type == CONFIG_TYPE_LIST

    assert filtered.error_code == NONE
    assert [(c.name, c.value) for c in filtered.configs] == [("retention.ms", "98765")]

    assert (brk.error_code, brk.resource_type, brk.resource_name) == (NONE, BROKER_RESOURCE, str(node))
    broker_cfg = {c.name: c.value for c in brk.configs}
    assert int(broker_cfg["message.max.bytes"]) > 0
    assert broker_cfg["advertised.listeners"] == f"PLAINTEXT://{broker.host}:{broker.port}"

    assert (unknown.error_code, unknown.resource_name) == (UNKNOWN_TOPIC_OR_PARTITION, missing)
    assert unknown.configs == ()


# --- DescribeCluster -----------------------------------------------------------------------

@over_versions(60)
def test_describe_cluster(broker, client, version):
    md = client.metadata([])
    r = client.request(60, version, include_cluster_authorized_operations=False, endpoint_type=1,
                       include_fenced_brokers=True)
    assert r.error_code == NONE and r.error_message is None
    assert r.throttle_time == NO_THROTTLE
    assert r.cluster_id == md.cluster_id
    assert r.controller_id == md.controller_id
    assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(b.node_id, broker.host, broker.port)
                                                                    for b in md.brokers]
    if version >= 1:
        assert r.endpoint_type == 1
    if version >= 2:  # KIP-1073: asked for fenced brokers too; a registered broker here never is
        assert [b.is_fenced for b in r.brokers] == [False] * len(md.brokers)


# --- InitProducerId ------------------------------------------------------------------------

@over_versions(22)
def test_init_producer_id(client, version):
    def init():
        r = client.request(22, version, transactional_id=None, transaction_timeout=60_000,
                           producer_id=-1, producer_epoch=-1)
        assert r.error_code == NONE and r.throttle_time == NO_THROTTLE
        assert r.producer_id >= 0 and r.producer_epoch == 0
        return r.producer_id

    ids = [init() for _ in range(3)]
    assert len(set(ids)) == 3, f"InitProducerId handed out {ids}"
    # The id works for idempotent produce.
    name = unique_topic("init-pid")
    client.create_topic(name)
    batch = make_batch([b"a", b"b"], producer_id=ids[0], producer_epoch=0, base_sequence=0)
    assert client.produced(name, 0, batch) == 0
    assert client.produced(name, 0, batch) == 0  # a resend is recognised
    assert client.log_end_offset(name) == 2


# --- OffsetForLeaderEpoch ---------------------------------------------------------------------

UNKNOWN_LEADER_EPOCH = 75


def _epoch_end(client, version, topic, leader_epoch, current_leader_epoch=-1, partition=0):
    values = dict(topics=[{"topic": topic, "partitions": [
        {"partition": partition, "current_leader_epoch": current_leader_epoch, "leader_epoch": leader_epoch}]}])
    if version >= 3:
        values["replica_id"] = -1
    r = client.request(23, version, **values)
    (t,) = r.topics
    assert t.topic == topic
    (p,) = t.partitions
    assert p.partition == partition
    return p


@over_versions(23)
def test_offset_for_leader_epoch(client, version):
    topic = unique_topic("ofle")
    client.create_topic(topic, 1)
    empty = _epoch_end(client, version, topic, 0)
    assert (empty.error_code, empty.leader_epoch, empty.end_offset) == (NONE, -1, -1), empty  # no epoch yet
    for i in range(3):
        client.produced(topic, 0, make_batch([b"v%d" % i]))
    p = _epoch_end(client, version, topic, 0)
    assert (p.error_code, p.leader_epoch, p.end_offset) == (NONE, 0, 3), p  # the latest epoch ends at the LEO
    later = _epoch_end(client, version, topic, 7)
    assert (later.leader_epoch, later.end_offset) == (-1, -1), later  # above every known epoch: UNDEFINED, as Kafka
    ahead = _epoch_end(client, version, topic, 0, current_leader_epoch=5)
    assert ahead.error_code == UNKNOWN_LEADER_EPOCH, ahead
    missing = _epoch_end(client, version, unique_topic("nope"), 0)
    assert missing.error_code == UNKNOWN_TOPIC_OR_PARTITION, missing
