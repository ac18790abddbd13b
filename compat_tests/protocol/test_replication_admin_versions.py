"""Every advertised version of the replica placement APIs on one broker, over a raw socket:
ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments.

One broker is the whole cluster, as Kafka's answers for a one-broker KRaft cluster show: it is
every partition's preferred leader, so an election is ELECTION_NOT_NEEDED (a request for all
partitions leaves those out and lists each topic empty); the only reassignment it can take is
[itself], which changes nothing; a cancel finds NO_REASSIGNMENT_IN_PROGRESS; the list is empty.
Unknown topics and partitions get UNKNOWN_TOPIC_OR_PARTITION from the two that name them and are
left out of the list. Afterwards the partition still leads in epoch 0 with its records intact.
Moves between brokers are in test_reassignment.py.
"""

from __future__ import annotations

from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
PREFERRED, UNCLEAN = 0, 1


def node_id(client: Client) -> int:
    (b,) = client.metadata([]).brokers
    return b.node_id


def topic_with_records(client: Client, partitions: int = 2) -> tuple[str, bytes]:
    topic = unique_topic("placement")
    client.create_topic(topic, partitions)
    assert client.produce(topic, 0, make_batch([b"a", b"b"])).error_code == NONE
    return topic, client.stored_bytes(topic)


def assert_untouched(client: Client, topic: str, stored: bytes) -> None:
    (t,) = client.metadata([topic]).topics
    me = node_id(client)
    assert [(p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes)) for p in t.partitions] == \
        [(me, 0, [me], [me])] * len(t.partitions)
    assert client.stored_bytes(topic) == stored


def elect(client: Client, version: int, election: int, topics: dict[str, list[int]] | None):
    """(top-level error or None before v1, {topic: {partition: (code, message)}} in answer order)."""
    r = client.request(43, version, election_type=election, timeout=10_000, topic_partitions=None
                       if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()])
    results = {t.topic: {p.partition_id: (p.error_code, p.error_message) for p in t.partition_result}
               for t in r.replica_election_results}
    return getattr(r, "error_code", None), results


@over_versions(43)
def test_elect_preferred_is_not_needed_and_unknown_partitions_are_named(client, version):
    topic, stored = topic_with_records(client)
    missing = unique_topic("nowhere")
    top, results = elect(client, version, PREFERRED, {topic: [0, 1, 7], missing: [0]})
    assert top in (None, NONE) and (top is None) == (version == 0)
    assert list(results) == [topic, missing]
    assert list(results[topic]) == [0, 1, 7]
    not_needed = (ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    assert results[topic][0] == results[topic][1] == not_needed
    assert results[topic][7] == (UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-7")
    assert results[missing] == {0: (UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {missing}")}
    assert_untouched(client, topic, stored)


@over_versions(43)
def test_elect_for_every_partition_leaves_out_those_that_need_none(client, version):
    topic, stored = topic_with_records(client)
    top, results = elect(client, version, PREFERRED, None)
    assert top in (None, NONE)
    assert results[topic] == {}
    assert all(partitions == {} for partitions in results.values())
    assert_untouched(client, topic, stored)


@over_versions(43, lo=1)
def test_elect_unclean_with_a_live_leader_is_not_needed(client, version):
    topic, stored = topic_with_records(client)
    top, results = elect(client, version, UNCLEAN, {topic: [0, 1]})
    assert top == NONE
    assert {p: code for p, (code, _) in results[topic].items()} == {0: ELECTION_NOT_NEEDED, 1: ELECTION_NOT_NEEDED}
    assert_untouched(client, topic, stored)


@over_versions(43, lo=1)
def test_elect_with_an_unknown_election_type_is_refused_whole(client, version):
    topic, stored = topic_with_records(client)
    top, results = elect(client, version, 7, {topic: [0, 1]})
    assert top == INVALID_REQUEST
    assert results == {topic: {0: (INVALID_REQUEST, "Unknown election type 7"),
                               1: (INVALID_REQUEST, "Unknown election type 7")}}
    assert_untouched(client, topic, stored)


def alter(client: Client, version: int, topics: dict[str, dict[int, list[int] | None]], allow_rf_change=True):
    r = client.request(45, version, timeout=10_000, allow_replication_factor_change=allow_rf_change, topics=[
        {"name": t, "partitions": [{"partition_index": i, "replicas": reps} for i, reps in ps.items()]}
        for t, ps in topics.items()])
    assert (r.error_code, r.error_message) == (NONE, None)
    if version >= 1:
        assert r.allow_replication_factor_change is allow_rf_change
    return {t.name: {p.partition_index: (p.error_code, p.error_message) for p in t.partitions} for t in r.responses}


@over_versions(45)
def test_reassigning_to_this_broker_changes_nothing(client, version):
    topic, stored = topic_with_records(client)
    me = node_id(client)
    assert alter(client, version, {topic: {0: [me], 1: [me]}}) == {topic: {0: (NONE, None), 1: (NONE, None)}}
    assert_untouched(client, topic, stored)


@over_versions(45)
def test_reassignment_refusals(client, version):
    topic, stored = topic_with_records(client)
    me, missing = node_id(client), unique_topic("nowhere")
    results = alter(client, version, {topic: {0: [], 1: [me, me], 2: [me]}, missing: {0: [me]}})
    codes = {t: {i: code for i, (code, _) in ps.items()} for t, ps in results.items()}
    assert codes == {topic: {0: INVALID_REPLICA_ASSIGNMENT, 1: INVALID_REPLICA_ASSIGNMENT,
                             2: UNKNOWN_TOPIC_OR_PARTITION},
                     missing: {0: UNKNOWN_TOPIC_OR_PARTITION}}
    assert results[missing][0][1] == f"Unable to find a topic named {missing}."
    (code, message), = alter(client, version, {topic: {0: [me, me + 1]}})[topic].values()
    assert code == INVALID_REPLICA_ASSIGNMENT
    assert message == (f"The manual partition assignment includes broker {me + 1}, "
                       f"but no such broker is registered.")
    assert alter(client, version, {topic: {1: None}}) == {
        topic: {1: (NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")}}
    assert_untouched(client, topic, stored)


@over_versions(45, lo=1)
def test_replication_factor_change_flag_is_echoed(client, version):
    topic, stored = topic_with_records(client)
    me = node_id(client)
    assert alter(client, version, {topic: {0: [me]}}, allow_rf_change=False) == {topic: {0: (NONE, None)}}
    assert_untouched(client, topic, stored)


@over_versions(46)
def test_no_reassignment_is_listed(client, version):
    topic, _ = topic_with_records(client)
    me = node_id(client)
    alter(client, 0, {topic: {0: [me]}})
    for topics in (None, [{"name": topic, "partition_indexes": [0, 1]}],
                   [{"name": unique_topic("nowhere"), "partition_indexes": [0]}]):
        r = client.request(46, version, timeout=10_000, topics=topics)
        assert (r.error_code, r.error_message, r.topics) == (NONE, None, ())
