"""Share groups' admin side (KIP-932) over a raw socket at every served version: the share
coordinator's ReadShareGroupStateSummary and DeleteShareGroupState, the group coordinator's
DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets, DeleteGroups of a
share group (ListGroups and DescribeGroups after it), an idle share group after a restart (kill -9
or SIGTERM: still listed, its offsets described, the group deleted), and a share group's id
refused to classic and consumer-protocol members, each with Kafka's error codes. What the Java Admin sees is
test_share_groups_java.py's.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic

NONE, UNKNOWN_TOPIC_OR_PARTITION, INCONSISTENT_GROUP_PROTOCOL = 0, 3, 23
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 68, 69
WRITE, DELETE_STATE, READ_SUMMARY = 85, 86, 87
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
SHARE_HEARTBEAT, SHARE_FETCH, CONSUMER_HEARTBEAT = 76, 78, 68
JOIN_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 11, 15, 16, 42
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
ACCEPT = 1
NO_TOPIC_ID = uuid.UUID(int=0)

BROKER_ARGS = ["--share-auto-offset-reset", "earliest"]


def new_group() -> str:
    return f"sa-{uuid.uuid4().hex[:12]}"


def write_state(client: Client, group: str, topic_id, partition: int, start: int, batches) -> None:
    r = client.request(WRITE, 0, group_id=group, topics=[{"topic_id": topic_id, "partitions": [
        {"partition": partition, "state_epoch": 1, "leader_epoch": 0, "start_offset": start,
         "state_batches": [{"first_offset": f, "last_offset": l, "delivery_state": s, "delivery_count": 1}
                           for f, l, s in batches]}]}])
    assert r.results[0].partitions[0].error_code == NONE, r


def summary(client: Client, group: str, topic_id, partition: int = 0, version: int = 1):
    r = client.request(READ_SUMMARY, version, group_id=group, topics=[
        {"topic_id": topic_id, "partitions": [{"partition": partition, "leader_epoch": 0}]}])
    return r.results[0].partitions[0]


def describe(client: Client, group: str, topics, version: int = 1):
    """{topic name: {partition: (start offset, lag or None, error)}}, and the group's error."""
    r = client.request(DESCRIBE_OFFSETS, version, groups=[{"group_id": group, "topics": None if topics is None else [
        {"topic_name": name, "partitions": parts} for name, parts in topics]}])
    (g,) = r.groups
    return g.error_code, {t.topic_name: {p.partition_index: (p.start_offset, getattr(p, "lag", None), p.error_code)
                                         for p in t.partitions} for t in g.topics}


def share_member(client: Client, group: str, topic: str) -> tuple[str, int]:
    member = str(uuid.uuid4())
    r = client.request(SHARE_HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=0, rack_id=None,
                       subscribed_topic_names=[topic])
    assert r.error_code == NONE, r
    return member, r.member_epoch


def leave(client: Client, group: str, member: str) -> None:
    r = client.request(SHARE_HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=-1, rack_id=None,
                       subscribed_topic_names=None)
    assert r.error_code == NONE, r


def fetch_acquired(client: Client, group: str, member: str, session_epoch: int, topic_id, acks=()):
    r = client.request(SHARE_FETCH, 1, group_id=group, member_id=member, share_session_epoch=session_epoch,
                       max_wait=0, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                       topics=[{"topic_id": topic_id, "partitions": [
                           {"partition_index": 0, "acknowledgement_batches": list(acks)}]}],
                       forgotten_topics_data=[])
    assert r.error_code == NONE, r
    return [(a.first_offset, a.last_offset, a.delivery_count) for t in r.responses for p in t.partitions
            for a in p.acquired_records]


def alter(client: Client, group: str, topics) -> tuple[int, dict]:
    r = client.request(ALTER_OFFSETS, 0, group_id=group, topics=[
        {"topic_name": name, "partitions": [{"partition_index": p, "start_offset": o} for p, o in parts]}
        for name, parts in topics])
    return r.error_code, {t.topic_name: {p.partition_index: p.error_code for p in t.partitions} for t in r.responses}


def delete_offsets(client: Client, group: str, names) -> tuple[int, dict]:
    r = client.request(DELETE_OFFSETS, 0, group_id=group, topics=[{"topic_name": n} for n in names])
    return r.error_code, {t.topic_name: t.error_code for t in r.responses}


@over_versions(READ_SUMMARY)
def test_read_summary_answers_the_start_and_records_done_and_fences_nothing(broker, client, version):
    topic_id = client.create_topic(unique_topic("sa-sum"), partitions=1)
    group = new_group()
    p = summary(client, group, topic_id, version=version)
    assert (p.error_code, p.start_offset) == (NONE, -1)
    assert getattr(p, "delivery_complete_count", -1) == -1
    write_state(client, group, topic_id, 0, 2, [(2, 3, ACKNOWLEDGED), (4, 5, AVAILABLE), (6, 6, ARCHIVED)])
    p = summary(client, group, topic_id, version=version)
    assert (p.error_code, p.start_offset, p.state_epoch) == (NONE, 2, 1)
    if version >= 1:
        assert p.delivery_complete_count == 3  # 2..3 acknowledged, 6 archived; 4..5 are to be delivered again
    assert summary(client, group, uuid.uuid4(), version=version).error_code == UNKNOWN_TOPIC_OR_PARTITION
    # a summary asked at a later leader epoch records nothing: the leader at epoch 0 may still write
    client.request(READ_SUMMARY, version, group_id=group, topics=[
        {"topic_id": topic_id, "partitions": [{"partition": 0, "leader_epoch": 9}]}])
    write_state(client, group, topic_id, 0, 2, [(4, 4, ACKNOWLEDGED)])


@over_versions(DELETE_STATE)
def test_delete_state_removes_it_for_good(broker, client, version):
    topic_id = client.create_topic(unique_topic("sa-del"), partitions=1)
    group = new_group()
    write_state(client, group, topic_id, 0, 3, [(3, 3, ACKNOWLEDGED)])

    def delete(tid) -> int:
        r = client.request(DELETE_STATE, version, group_id=group, topics=[
            {"topic_id": tid, "partitions": [{"partition": 0}]}])
        return r.results[0].partitions[0].error_code

    assert delete(topic_id) == NONE
    assert summary(client, group, topic_id).start_offset == -1
    assert delete(topic_id) == NONE  # nothing left to delete is no error
    assert delete(uuid.uuid4()) == UNKNOWN_TOPIC_OR_PARTITION
    broker.kill()  # the tombstone is what a restart replays
    broker.start()
    with Client.to(broker) as again:
        assert summary(again, group, topic_id).start_offset == -1


@over_versions(DESCRIBE_OFFSETS)
def test_describe_offsets_of_asked_partitions_or_of_every_one_with_state(broker, client, version):
    topic = unique_topic("sa-desc")
    topic_id = client.create_topic(topic, partitions=2)
    client.produced(topic, 0, make_batch([b"%d" % i for i in range(6)]))
    group = new_group()
    share_member(client, group, topic)  # assigned both partitions: the ones that may have state
    write_state(client, group, topic_id, 0, 2, [(2, 2, ACKNOWLEDGED), (3, 3, AVAILABLE)])
    lag = 3 if version >= 1 else None  # high watermark 6, start 2, one record past it done with
    missing = unique_topic("sa-none")
    code, got = describe(client, group, [(topic, [0, 1]), (missing, [0])], version)
    assert code == NONE
    assert got == {topic: {0: (2, lag, NONE), 1: (-1, -1 if version >= 1 else None, NONE)},
                   missing: {0: (-1, -1 if version >= 1 else None, NONE)}}
    assert describe(client, group, None, version) == (NONE, {topic: {0: (2, lag, NONE)}})
    assert describe(client, new_group(), None, version) == (NONE, {})


@over_versions(ALTER_OFFSETS)
def test_alter_offsets_needs_an_empty_group_and_the_next_member_starts_there(broker, client, version):
    topic = unique_topic("sa-alter")
    topic_id = client.create_topic(topic, partitions=1)
    client.produced(topic, 0, make_batch([b"%d" % i for i in range(5)]))
    group = new_group()
    member, _ = share_member(client, group, topic)
    assert fetch_acquired(client, group, member, 0, topic_id) == [(0, 4, 1)]
    fetch_acquired(client, group, member, 1, topic_id, [{"first_offset": 0, "last_offset": 4,
                                                        "acknowledge_types": [ACCEPT]}])
    assert alter(client, group, [(topic, [(0, 1)])]) == (NON_EMPTY_GROUP, {})
    leave(client, group, member)
    missing = unique_topic("sa-none")
    assert alter(client, group, [(topic, [(0, 1), (3, 0)]), (missing, [(0, 0)])]) == \
        (NONE, {topic: {0: NONE, 3: UNKNOWN_TOPIC_OR_PARTITION}, missing: {0: UNKNOWN_TOPIC_OR_PARTITION}})
    assert summary(client, group, topic_id).start_offset == 1
    assert describe(client, group, [(topic, [0])]) == (NONE, {topic: {0: (1, 4, NONE)}})  # 1..4 to deliver again
    again, _ = share_member(client, group, topic)  # records 1..4 were accepted; the reset delivers them again
    assert fetch_acquired(client, group, again, 0, topic_id) == [(1, 4, 1)]
    # a group never seen is created empty by an alter, and is then listed
    fresh = new_group()
    assert alter(client, fresh, [(topic, [(0, 3)])]) == (NONE, {topic: {0: NONE}})
    # a start past the end is taken, and its lag is negative: Kafka's lag is not held at zero
    past = new_group()
    assert alter(client, past, [(topic, [(0, 8)])]) == (NONE, {topic: {0: NONE}})
    assert describe(client, past, [(topic, [0])]) == (NONE, {topic: {0: (8, -3, NONE)}})
    listed = client.request(LIST_GROUPS, 5, states_filter=[], types_filter=["share"])
    assert fresh in {g.group_id for g in listed.groups}


@over_versions(DELETE_OFFSETS)
def test_delete_offsets_removes_a_topics_state_from_an_empty_group(broker, client, version):
    topic = unique_topic("sa-deloff")
    topic_id = client.create_topic(topic, partitions=2)
    group = new_group()
    for p in (0, 1):
        write_state(client, group, topic_id, p, 4, [(4, 4, ACKNOWLEDGED)])
    assert delete_offsets(client, new_group(), [topic]) == (GROUP_ID_NOT_FOUND, {})
    member, _ = share_member(client, group, topic)
    assert delete_offsets(client, group, [topic]) == (NON_EMPTY_GROUP, {})
    leave(client, group, member)
    missing = unique_topic("sa-none")
    assert delete_offsets(client, group, [topic, missing]) == (NONE, {topic: NONE, missing: UNKNOWN_TOPIC_OR_PARTITION})
    assert [summary(client, group, topic_id, p).start_offset for p in (0, 1)] == [-1, -1]
    assert describe(client, group, None) == (NONE, {})


@over_versions(DELETE_GROUPS, lo=2)
def test_delete_groups_takes_an_empty_share_group_with_its_state(broker, client, version):
    topic = unique_topic("sa-delg")
    topic_id = client.create_topic(topic, partitions=1)
    group = new_group()
    member, _ = share_member(client, group, topic)
    write_state(client, group, topic_id, 0, 7, [])
    assert client.request(DELETE_GROUPS, version, groups_names=[group]).results[0].error_code == NON_EMPTY_GROUP
    leave(client, group, member)
    assert client.request(DELETE_GROUPS, version, groups_names=[group]).results[0].error_code == NONE
    assert summary(client, group, topic_id).start_offset == -1
    assert group not in {g.group_id for g in client.request(LIST_GROUPS, 5, states_filter=[], types_filter=[]).groups}
    (described,) = client.request(DESCRIBE_GROUPS, 6, groups=[group], include_authorized_operations=False).groups
    assert (described.error_code, described.group_state) == (GROUP_ID_NOT_FOUND, "Dead")
    assert client.request(DELETE_GROUPS, version, groups_names=[group]).results[0].error_code == GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("stop", ["kill", "stop"])
def test_an_idle_share_group_survives_a_restart(broker, client, stop):
    """Membership is not kept, but the group is (its records in __consumer_offsets): after a
    kill -9 or a SIGTERM, an idle share group is listed Empty, its offsets are described, and it
    is deleted with its state."""
    topic = unique_topic("sa-restart")
    topic_id = client.create_topic(topic, partitions=2)
    client.produced(topic, 1, make_batch([b"%d" % i for i in range(8)]))
    group = new_group()
    member, _ = share_member(client, group, topic)
    write_state(client, group, topic_id, 1, 5, [])
    leave(client, group, member)
    getattr(broker, stop)()
    broker.start()
    with Client.to(broker) as again:
        listed = again.request(LIST_GROUPS, 5, states_filter=[], types_filter=["share"]).groups
        assert [(g.group_id, g.group_state, g.group_type) for g in listed if g.group_id == group] == \
            [(group, "Empty", "share")]
        assert describe(again, group, None) == (NONE, {topic: {1: (5, 3, NONE)}})
        assert again.request(DELETE_GROUPS, 2, groups_names=[group]).results[0].error_code == NONE
        assert summary(again, group, topic_id, 1).start_offset == -1
        assert group not in {g.group_id for g in again.request(LIST_GROUPS, 5, states_filter=[],
                                                                 types_filter=[]).groups}
    broker.kill()  # the group's tombstones are what a restart replays
    broker.start()
    with Client.to(broker) as third:
        assert third.request(DELETE_GROUPS, 2, groups_names=[group]).results[0].error_code == GROUP_ID_NOT_FOUND


def test_a_group_whose_topic_was_deleted_is_still_deleted(broker, client):
    """The group's record still names the deleted topic's share-partitions: they are not asked
    about (their state went with the topic), so the group is described empty and deleted."""
    topic = unique_topic("sa-gone")
    topic_id = client.create_topic(topic, partitions=1)
    group = new_group()
    member, _ = share_member(client, group, topic)
    write_state(client, group, topic_id, 0, 1, [])
    leave(client, group, member)
    r = client.request(20, 6, timeout=10_000, topics=[{"name": topic, "topic_id": None}])
    assert r.responses[0].error_code == NONE
    assert describe(client, group, None) == (NONE, {})
    assert client.request(DELETE_GROUPS, 2, groups_names=[group]).results[0].error_code == NONE


def test_a_share_groups_id_refuses_classic_and_consumer_members(broker, client):
    topic = unique_topic("sa-kind")
    client.create_topic(topic, partitions=1)
    group = new_group()
    share_member(client, group, topic)
    joined = client.request(JOIN_GROUP, 9, group_id=group, session_timeout=10_000, rebalance_timeout=10_000,
                            member_id="", group_instance_id=None, protocol_type="consumer", reason=None,
                            protocols=[dict(name="range", metadata=b"")])
    assert (joined.error_code, joined.member_id) == (INCONSISTENT_GROUP_PROTOCOL, "")
    beat = client.request(CONSUMER_HEARTBEAT, 1, group_id=group, member_id=str(uuid.uuid4()), member_epoch=0,
                          instance_id=None, rack_id=None, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                          subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
    assert beat.error_code == GROUP_ID_NOT_FOUND
    assert beat.error_message == f"Group {group} is not a consumer group."
