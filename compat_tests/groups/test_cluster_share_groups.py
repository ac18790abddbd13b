"""Share groups on a real cluster: etcd and three brokers, both layouts, the Java client's
KafkaShareConsumer (java_share_members.py).

A share-partition's state lives in `__share_group_state`, at the share coordinator: the leader of
the key's partition of that topic. The group is chosen so that this is not the broker leading
the data partition, so every state write before the kill crosses brokers (WriteShareGroupState).
A member acknowledges 20 records and leaves; another acquires the next 10 and holds them; the
data partition's leader is SIGKILLed. The new leader reads the state from the coordinator
(ReadShareGroupState) and a new member gets exactly the 10 held records, each at its second
delivery, and none of the 20 acknowledged ones. A broker that is not the coordinator answers
NOT_COORDINATOR. The Java Admin's share-group calls go to the group's coordinator, chosen here
not to be the share-partition's share coordinator, so the state they read, reset and delete
crosses brokers (ReadShareGroupStateSummary, InitializeShareGroupState, DeleteShareGroupState),
nor the data partition's leader, which it asks for the lag's end offset (ListOffsets);
the data partition's leader drops its copy of a share-partition once no session fetches from it,
so a group deleted there and made again starts afresh. A partition whose only replica's broker
is killed answers its start offset and lag -1 (no end offset to take it from).

A group config set through one broker (IncrementalAlterConfigs on resource type GROUP, kept in
etcd) is described by every broker and binds the share-partition at another broker, its
data partition's leader.

The group coordinator of a share group with two members is SIGKILLed: the next one replays the
members from `__consumer_offsets`, describes them as they were, and each member's heartbeat at
its old epoch is accepted with the same epoch and assignment, no rebalance.

A member that goes gives its records back at the share-partition's leader, which is not its
group's coordinator, at once and not when their (60 s) locks run out: one that closes does it
itself (ShareAcknowledge at epoch -1 there), and one killed with SIGKILL by losing its
connection to the leader, which ends the share session it had opened there.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from broker.groups.share import state_log
from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.java_share_members import ShareAdmin, accepted, assert_a_released_record_is_archived_at_two_deliveries, assert_no_failures, produce, wait_until
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.share_group_requests import assigned, heartbeat, owned_by_member
from compat_tests.helpers.share_handover import LOCK_MS, assert_a_member_s_records_go_to_another, set_group_config
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(300)

STATE_PARTITIONS = 3
NOT_COORDINATOR, GROUP_KEY_TYPE, SHARE_KEY_TYPE, READ_SHARE_GROUP_STATE = 16, 0, 2, 84
DESCRIBE_CONFIGS, GROUP_RESOURCE, SHARE_GROUP_DESCRIBE = 32, 32, 77


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param, extra_args=(
        "--share-coordinator-state-topic-partitions", str(STATE_PARTITIONS), "--offsets-topic-partitions", "3",
        "--share-auto-offset-reset", "earliest", "--group-share-heartbeat-interval-ms", "1000",
        "--group-share-session-timeout-ms", "20000")) as c:
        yield c


def topic_id_of(cluster: Cluster, topic: str) -> uuid.UUID:
    proc = next(p for p in cluster.brokers.values() if p.is_running())
    with Client(proc.host, proc.port) as c:
        return c.topic_id(topic)


def state_leaders(cluster: Cluster) -> dict[int, int]:
    """The leaders of `__share_group_state`'s partitions, once it exists (asked for by FindCoordinator)."""
    proc = next(p for p in cluster.brokers.values() if p.is_running())
    with Client(proc.host, proc.port) as c:
        c.request(10, 6, key_type=SHARE_KEY_TYPE, coordinator_keys=[f"g:{state_log.kafka_uuid(uuid.uuid4())}:0"])
    md = cluster.wait_for(lambda md: len(md["topics"].get(state_log.TOPIC, {})) == STATE_PARTITIONS and all(
        p["leader"] >= 0 for p in md["topics"][state_log.TOPIC].values()), "__share_group_state has leaders")
    return {i: p["leader"] for i, p in md["topics"][state_log.TOPIC].items()}


def read_state(cluster: Cluster, node: int, group: str, topic_id: uuid.UUID, leader_epoch: int):
    proc = cluster.brokers[node]
    with Client(proc.host, proc.port) as c:
        r = c.request(READ_SHARE_GROUP_STATE, 0, group_id=group, topics=[
            {"topic_id": topic_id, "partitions": [{"partition": 0, "leader_epoch": leader_epoch}]}])
    return r.results[0].partitions[0]


def test_a_killed_leader_s_successor_redelivers_exactly_what_was_not_acknowledged(cluster, members):
    topic = unique_topic("cshare")
    cluster.create_topic(topic, 1, 3)
    topic_id, data_leader = topic_id_of(cluster, topic), cluster.leader(topic)
    leaders = state_leaders(cluster)
    group = next(g for g in (f"cshare-g-{uuid.uuid4().hex[:8]}" for _ in range(1000)) if leaders[
        state_log.partition_for(state_log.coordinator_key((g, topic_id, 0)), STATE_PARTITIONS)] != data_leader)
    coordinator = leaders[state_log.partition_for(state_log.coordinator_key((group, topic_id, 0)), STATE_PARTITIONS)]

    done = [f"done-{i}" for i in range(20)]
    produce(cluster.bootstrap, topic, done)
    acker = members(cluster.bootstrap, "acker", topic, group)
    wait_until(lambda: set(accepted([acker])) == set(done), "the first 20 accepted", [acker])
    acker.close()
    pending = [f"pending-{i}" for i in range(10)]
    produce(cluster.bootstrap, topic, pending)
    holder = members(cluster.bootstrap, "holder", topic, group, hold=True)
    held = {r[2] for r in holder.wait_for("held")["records"]}
    assert held and held <= set(pending), holder.describe()

    epoch = cluster.metadata()["topics"][topic][0]["epoch"]  # the data partition's: a lower one is fenced
    stored = read_state(cluster, coordinator, group, topic_id, epoch)
    assert stored.error_code == 0 and stored.start_offset == len(done), stored  # the acker's 20 are done
    bystander = next(n for n in cluster.brokers if n != coordinator)
    assert read_state(cluster, bystander, group, topic_id, epoch).error_code == NOT_COORDINATOR

    cluster.brokers[data_leader].kill()  # SIGKILL: the state it wrote is at the coordinator
    holder.stop()
    cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] not in (-1, data_leader), "a new leader")
    after = members(cluster.bootstrap, "after", topic, group)
    wait_until(lambda: set(accepted([after])) >= set(pending), "the pending records accepted after the kill",
               [after])
    got = after.records()
    assert not [r for r in got if r[2] in done], got
    assert all(r[3] == 2 for r in got if r[2] in held), got  # the delivery before the kill counted
    assert Counter(r[2] for r in got) == Counter(pending), got
    assert_no_failures([after])


def group_coordinator(cluster: Cluster, group: str) -> int:
    proc = next(p for p in cluster.brokers.values() if p.is_running())
    with Client(proc.host, proc.port) as c:
        (found,) = c.request(10, 6, key_type=GROUP_KEY_TYPE, coordinator_keys=[group]).coordinators
    assert found.error_code == 0, found
    return found.node_id


def test_the_admin_resets_and_deletes_state_another_broker_coordinates(cluster, members, tmp_path):
    topic = unique_topic("cshare-admin")
    cluster.create_topic(topic, 1, 3)
    topic_id = topic_id_of(cluster, topic)
    leaders = state_leaders(cluster)

    def share_coordinator(g: str) -> int:
        return leaders[state_log.partition_for(state_log.coordinator_key((g, topic_id, 0)), STATE_PARTITIONS)]

    # the data partition's leader, which holds the share-partition, is not the group's coordinator
    # either: its copy of the state must not outlive the admin's reset and delete
    data_leader = cluster.leader(topic)
    group = next(g for g in (f"cshare-a-{uuid.uuid4().hex[:8]}" for _ in range(1000))
                 if share_coordinator(g) != group_coordinator(cluster, g) != data_leader)
    values = [f"v-{i}" for i in range(10)]
    produce(cluster.bootstrap, topic, values)
    epoch = cluster.metadata()["topics"][topic][0]["epoch"]
    with ShareAdmin(cluster.bootstrap, log_dir=tmp_path) as admin:
        assert admin.call("alterOffsets", group=group, offsets=[[topic, 0, 3]]) == {f"{topic}:0": None}
        assert read_state(cluster, share_coordinator(group), group, topic_id, epoch).start_offset == 3
        listed = admin.call("listOffsets", group=group, partitions=None)
        assert list(listed) == [f"{topic}:0"] and listed[f"{topic}:0"]["start"] == 3, listed
        # the lag needs the end offset, which the group coordinator asks the data leader for
        assert listed[f"{topic}:0"]["lag"] == 7, listed
        member = members(cluster.bootstrap, "after-alter", topic, group)
        wait_until(lambda: set(accepted([member])) == set(values[3:]), "records 3..9 accepted", [member])
        member.close()
        assert admin.call("deleteGroups", groups=[group]) == {group: None}
        assert read_state(cluster, share_coordinator(group), group, topic_id, epoch).start_offset == -1
        assert admin.call("listOffsets", group=group, partitions=None) == {}
        # a new group of the same id starts afresh (share.auto.offset.reset earliest): all ten again
        again = members(cluster.bootstrap, "after-delete", topic, group)
        wait_until(lambda: set(accepted([again])) == set(values), "records 0..9 accepted again", [again])
        again.close()
        assert_no_failures([member, again])


def test_the_lag_of_a_partition_whose_leader_is_gone_is_unknown(cluster, tmp_path):
    """A one-replica topic's only broker is SIGKILLed: the group coordinator (another broker) still
    answers the start offset from the share coordinator (a third, or itself), and lag -1, which
    the Java Admin reads as no lag; the describe does not fail or wait for the dead broker."""
    topic = unique_topic("cshare-gone")
    cluster.create_topic(topic, 1, 1)
    topic_id = topic_id_of(cluster, topic)
    leaders = state_leaders(cluster)
    data_leader = cluster.leader(topic)
    group = next(g for g in (f"cshare-g-{uuid.uuid4().hex[:8]}" for _ in range(1000))
                 if data_leader not in (group_coordinator(cluster, g), leaders[state_log.partition_for(
                     state_log.coordinator_key((g, topic_id, 0)), STATE_PARTITIONS)]))
    produce(cluster.bootstrap, topic, [f"g-{i}" for i in range(10)])
    with ShareAdmin(cluster.bootstrap, log_dir=tmp_path) as admin:
        assert admin.call("alterOffsets", group=group, offsets=[[topic, 0, 4]]) == {f"{topic}:0": None}
        assert admin.call("listOffsets", group=group, partitions=None)[f"{topic}:0"]["lag"] == 6
        cluster.brokers[data_leader].kill()
        listed = admin.call("listOffsets", group=group, partitions=None)
        assert listed == {f"{topic}:0": {"start": 4, "leaderEpoch": None, "lag": None}}, listed


def group_config_at(cluster: Cluster, node: int, group: str, name: str) -> str | None:
    proc = cluster.brokers[node]
    with Client(proc.host, proc.port) as c:
        r = c.request(DESCRIBE_CONFIGS, 4, resources=[{"resource_type": GROUP_RESOURCE, "resource_name": group,
                                                      "configuration_keys": [name]}],
                      include_synonyms=False, include_documentation=False)
    (result,) = r.results
    assert result.error_code == 0, result
    return next((e.value for e in result.configs if e.name == name), None)


def test_a_group_config_set_at_one_broker_binds_the_share_partition_at_another(cluster, members):
    topic = unique_topic("cshare-cfg")
    cluster.create_topic(topic, 1, 3)
    data_leader = cluster.leader(topic)
    group = f"cshare-cfg-g-{uuid.uuid4().hex[:8]}"
    elsewhere = cluster.brokers[next(n for n in cluster.brokers if n != data_leader)]
    set_group_config(elsewhere.host, elsewhere.port, group, "share.delivery.count.limit", "2")
    for node in cluster.brokers:  # each broker's etcd watch delivers it
        wait_until(lambda: group_config_at(cluster, node, group, "share.delivery.count.limit") == "2",
                   f"broker {node} describes the group's delivery limit", [])
    assert_a_released_record_is_archived_at_two_deliveries(cluster.bootstrap, topic, group, members)


def test_an_idle_group_moves_with_its_coordinator(cluster, members, tmp_path):
    """The group coordinator of an idle share group is SIGKILLed: the broker that leads its
    `__consumer_offsets` partition next replays the group, so the Java Admin still finds it Empty,
    lists its offsets (the state at its share coordinator, a third broker) and deletes it."""
    topic = unique_topic("cshare-move")
    cluster.create_topic(topic, 1, 3)
    topic_id = topic_id_of(cluster, topic)
    leaders = state_leaders(cluster)
    group = next(g for g in (f"cshare-m-{uuid.uuid4().hex[:8]}" for _ in range(1000))
                 if leaders[state_log.partition_for(state_log.coordinator_key((g, topic_id, 0)), STATE_PARTITIONS)]
                 != group_coordinator(cluster, g))
    values = [f"m-{i}" for i in range(10)]
    produce(cluster.bootstrap, topic, values)
    member = members(cluster.bootstrap, "before-move", topic, group)
    wait_until(lambda: set(accepted([member])) == set(values), "every record accepted", [member])
    member.close()
    with ShareAdmin(cluster.bootstrap, log_dir=tmp_path) as admin:
        wait_until(lambda: admin.call("listOffsets", group=group, partitions=None).get(f"{topic}:0", {})
                   .get("start") == 10, "the start moved past every accepted record", [member])
        old = group_coordinator(cluster, group)
        cluster.brokers[old].kill()
        cluster.wait_for(lambda md: all(p["leader"] not in (-1, old)
                                        for p in md["topics"]["__consumer_offsets"].values()),
                         "__consumer_offsets led by the others")
        assert group_coordinator(cluster, group) != old
        assert admin.call("describe", groups=[group]) == {group: {"state": "Empty", "members": 0}}
        listed = admin.call("listOffsets", group=group, partitions=None)
        assert list(listed) == [f"{topic}:0"] and listed[f"{topic}:0"]["start"] == 10, listed
        assert admin.call("deleteGroups", groups=[group]) == {group: None}
        assert "GroupIdNotFoundException" in admin.call("describe", groups=[group])[group]
    assert_no_failures([member])


def test_members_go_on_at_their_epochs_with_the_next_coordinator(cluster):
    topic = unique_topic("cshare-members")
    cluster.create_topic(topic, 2, 3)
    group = f"cshare-mm-{uuid.uuid4().hex[:8]}"
    a, b = str(uuid.uuid4()), str(uuid.uuid4())

    def joined(c: Client, member: str):  # the coordinator may still be loading its partition
        r = heartbeat(c, group, member, 0, [topic])
        return r if r.error_code == 0 else None

    old = group_coordinator(cluster, group)
    with Client(cluster.brokers[old].host, cluster.brokers[old].port) as c:
        joined_at = wait_until(lambda: joined(c, a), "a joins", []).member_epoch
        epoch = wait_until(lambda: joined(c, b), "b joins", []).member_epoch
        assert heartbeat(c, group, a, joined_at).member_epoch == epoch
        group_epoch, before = owned_by_member(c, group)
    assert {m: e for m, (e, _) in before.items()} == {a: epoch, b: epoch}
    cluster.brokers[old].kill()
    cluster.wait_for(lambda md: all(p["leader"] not in (-1, old) for p in md["topics"]["__consumer_offsets"].values()),
                     "__consumer_offsets led by the others")
    new = group_coordinator(cluster, group)
    assert new != old
    with Client(cluster.brokers[new].host, cluster.brokers[new].port) as c:
        wait_until(lambda: c.request(SHARE_GROUP_DESCRIBE, 1, group_ids=[group], include_authorized_operations=False)
                   .groups[0].error_code == 0, "the next coordinator loaded the group", [])
        assert owned_by_member(c, group) == (group_epoch, before)
        for m in (a, b):
            r = heartbeat(c, group, m, epoch)
            assert (r.error_code, r.member_epoch) == (0, epoch), r
            assert assigned(r) == before[m][1], r
        assert owned_by_member(c, group) == (group_epoch, before)  # no rebalance


@pytest.mark.parametrize("goes", ["killed", "closed"])
def test_a_member_that_goes_gives_its_records_back_at_a_leader_that_is_not_its_coordinator(cluster, members,
                                                                                            goes):
    topic = unique_topic("cshare-gone")
    cluster.create_topic(topic, 1, 3)
    data_leader = cluster.leader(topic)
    group = next(g for g in (f"cshare-gone-{uuid.uuid4().hex[:8]}" for _ in range(1000))
                 if group_coordinator(cluster, g) != data_leader)
    elsewhere = cluster.brokers[next(n for n in cluster.brokers if n != data_leader)]
    set_group_config(elsewhere.host, elsewhere.port, group, "share.record.lock.duration.ms", str(LOCK_MS))
    for node in cluster.brokers:  # the leader's etcd watch must have it before the holder acquires
        wait_until(lambda: group_config_at(cluster, node, group, "share.record.lock.duration.ms") == str(LOCK_MS),
                   f"broker {node} has the group's lock duration", [])
    assert_a_member_s_records_go_to_another(cluster.bootstrap, topic, group, members, goes)
