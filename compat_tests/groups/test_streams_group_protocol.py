"""KIP-1071 over a raw socket: StreamsGroupHeartbeat and StreamsGroupDescribe at every served
version, driven by hand the way Kafka Streams' StreamsGroupHeartbeatRequestManager drives them
(join at epoch 0 with the topology, heartbeat reporting the tasks it owns, leave at -1).

Checked against Kafka's group coordinator: tasks shared by three members with none running
anywhere twice, an active task handed over only once its owner gave it up, standbys on another
process than their active and moving when a member leaves, internal topics created with the
partition counts the topology implies, the topology's statuses, the group in ListGroups,
DescribeGroups and StreamsGroupDescribe, and Kafka's error codes for bad input.

The module's broker runs with short streams-group timings (heartbeat 500 ms, session 3 s) and
one standby per stateful task.
"""

from __future__ import annotations

import uuid

from compat_tests.helpers.consumer_group_requests import commit, fetch
from compat_tests.helpers.group_requests import offset_delete
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.streams_group_requests import (
    DESCRIBE, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, HEARTBEAT, INVALID_REQUEST, NONE, UNKNOWN_MEMBER_ID, Member,
    as_ids, describe, settle, stateful_topology, tasks_of)
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID = 111, 82
STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION, GROUP_SUBSCRIBED_TO_TOPIC = 113, 35, 86
INCONSISTENT_GROUP_PROTOCOL, NON_EMPTY_GROUP, STREAMS_INVALID_TOPOLOGY = 23, 68, 130
JOIN_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, CONSUMER_HEARTBEAT = 11, 15, 16, 42, 68
SHARE_HEARTBEAT = 76
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS, STALE_TOPOLOGY = 1, 3, 0
HEARTBEAT_MS, SESSION_MS = 500, 3000

BROKER_ARGS = [
    "--group-streams-heartbeat-interval-ms", str(HEARTBEAT_MS),
    "--group-streams-session-timeout-ms", str(SESSION_MS),
    "--group-streams-num-standby-replicas", "1"]


def new_group() -> str:
    return f"app-{uuid.uuid4().hex[:12]}"


def repartitioning_topology(source: str, app: str) -> dict:
    """Subtopology 0 reads `source` and writes a repartition topic; 1 reads it and keeps a store."""
    repartition = f"{app}-by-key-repartition"
    return {"epoch": 1, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [], "state_changelog_topics": [],
         "repartition_sink_topics": [repartition], "repartition_source_topics": [], "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [repartition], "source_topic_regex": [],
         "state_changelog_topics": [{"name": f"{app}-counts-changelog", "partitions": 0, "replication_factor": 0,
                                     "topic_configs": []}],
         "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": repartition, "partitions": 0, "replication_factor": 0,
                                        "topic_configs": []}],
         "copartition_groups": []}]}


def statuses(r) -> dict[int, str]:
    return {s.status_code: s.status_detail for s in r.status or ()}


# --- StreamsGroupHeartbeat ---------------------------------------------------------------------

@over_versions(HEARTBEAT)
def test_three_members_share_the_tasks_and_a_leaver_hands_them_over(client, version):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=6)
    a = Member(client, app, stateful_topology(source, app), version)
    first = a.join()
    assert statuses(first) == {MISSING_INTERNAL_TOPICS: f"Internal topics are missing: {app}-store-changelog"}
    assert first.active_tasks == () and first.member_epoch == 1
    assert int(first.heartbeat_interval.total_seconds() * 1000) == HEARTBEAT_MS
    assert (first.acceptable_recovery_lag, first.task_offset_interval.total_seconds()) == (10_000, 60)
    a.heartbeat()  # the changelog now exists: the group is ready, a gets every task
    assert a.active == {("0", p) for p in range(6)} and not a.last.status
    b, c = Member(client, app, a.topology, version), Member(client, app, a.topology, version)
    b.join()
    c.join()
    assert b.active == c.active == set(), "b and c may not get what a still runs"
    settle(a, b, c)
    everything = {("0", p) for p in range(6)}
    assert a.active | b.active | c.active == everything
    assert [len(m.active) for m in (a, b, c)] == [2, 2, 2]
    # one standby per task, each on another process than its active
    standbys = [t for m in (a, b, c) for t in m.standby]
    assert sorted(standbys) == sorted(everything)
    g = describe(client, app)
    assert g.group_state == "Stable" and {m.member_id for m in g.members} == {a.member_id, b.member_id, c.member_id}
    # a leaves: its active tasks move to b and c, whose standbys of them were warm
    gone = set(a.active)
    a.leave()
    settle(b, c)
    assert b.active | c.active == everything and {len(b.active), len(c.active)} == {3}
    assert all(t in b.active or t in c.active for t in gone)
    assert b.standby == c.active and c.standby == b.active, "each standby now on the only other process"


@over_versions(HEARTBEAT)
def test_a_joiner_gets_tasks_only_once_their_owner_revoked_them(client, version):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=4)
    a = Member(client, app, stateful_topology(source, app), version)
    a.join()
    a.heartbeat()
    assert len(a.active) == 4
    b = Member(client, app, a.topology, version)
    b.join()
    assert b.epoch == 3 and b.active == set()
    revoking = a.heartbeat()
    assert revoking.member_epoch == 2 and len(a.active) == 2, "a keeps its epoch while it revokes"
    b.heartbeat()
    assert b.active == set(), "b still waits: a has not reported the revocation"
    a.heartbeat()
    assert a.epoch == 3
    b.heartbeat()
    assert len(b.active) == 2 and not (a.active & b.active)


@over_versions(HEARTBEAT)
def test_repartition_and_changelog_topics_are_created_with_derived_counts(client, version):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=3)
    a = Member(client, app, repartitioning_topology(source, app), version)
    first = a.join()
    assert statuses(first)[MISSING_INTERNAL_TOPICS] == (f"Internal topics are missing: {app}-by-key-repartition, "
                                                        f"{app}-counts-changelog")
    meta = client.request(3, 12, topics=[{"name": f"{app}-by-key-repartition", "topic_id": None},
                                  {"name": f"{app}-counts-changelog", "topic_id": None}],
                          allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert {t.name: len(t.partitions) for t in meta.topics} == {f"{app}-by-key-repartition": 3,
                                                                f"{app}-counts-changelog": 3}
    a.heartbeat()
    assert a.active == {(s, p) for s in "01" for p in range(3)} and a.standby == set()
    g = describe(client, app)
    (repartition,) = g.topology.subtopologies[1].repartition_source_topics
    assert (repartition.name, repartition.partitions) == (f"{app}-by-key-repartition", 3)


@over_versions(HEARTBEAT)
def test_missing_source_topic_is_a_status_and_the_group_not_ready(client, version):
    app = new_group()
    source = unique_topic("streams-absent")
    a = Member(client, app, stateful_topology(source, app), version)
    r = a.join()
    assert statuses(r) == {MISSING_SOURCE_TOPICS: f"Source topics {source} are missing."}
    assert r.active_tasks == () and describe(client, app).group_state == "NotReady"
    client.create_topic(source, partitions=2)
    a.heartbeat()  # the changelog is created now
    a.heartbeat()
    assert a.active == {("0", 0), ("0", 1)} and describe(client, app).group_state == "Stable"


@over_versions(HEARTBEAT)
def test_bad_heartbeats_get_kafkas_errors(client, version):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=1)
    a = Member(client, app, stateful_topology(source, app), version)

    def refused(member, **kw):
        r = member.request(**kw)
        return r.error_code, r.error_message

    assert refused(a, member_id="") == (INVALID_REQUEST, "MemberId can't be empty.")
    assert refused(a, rebalance_timeout=-1) == (INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
    assert refused(a, topology=None) == (INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
    assert refused(a, active_tasks=[{"subtopology_id": "0", "partitions": [0]}]) == (
        INVALID_REQUEST, "ActiveTasks must be empty when (re-)joining.")
    assert refused(a, member_epoch=-3) == (INVALID_REQUEST, "MemberEpoch is -3, but must be greater than or equal to -2.")
    bad = stateful_topology(source, app)
    bad["subtopologies"][0]["state_changelog_topics"][0]["partitions"] = 4
    assert refused(a, topology=bad) == (STREAMS_INVALID_TOPOLOGY, f"Changelog topic {app}-store-changelog must "
                                        "have an undefined partition count, but it is set to 4.")
    regex = stateful_topology(source, app)
    regex["subtopologies"][0]["source_topic_regex"] = ["in-.*"]
    assert refused(a, topology=regex) == (INVALID_REQUEST, "Regular expressions for source topics are not supported yet.")
    assert refused(a, member_epoch=1, topology=None) == (GROUP_ID_NOT_FOUND, f"Streams group {app} not found.")
    a.join()
    assert refused(a, member_epoch=a.epoch + 1)[0] == FENCED_MEMBER_EPOCH
    assert refused(a, member_epoch=1, member_id="stranger", topology=None)[0] == UNKNOWN_MEMBER_ID
    assert refused(a, member_epoch=-1, member_id="stranger", topology=None)[0] == UNKNOWN_MEMBER_ID
    assert refused(a, topology=stateful_topology(source, app)) == (
        INVALID_REQUEST, "Topology can only be provided when (re-)joining.")
    other = Member(client, app, stateful_topology(unique_topic("other"), app), version)
    assert refused(other) == (INVALID_REQUEST, "Topology updates are not supported yet.")
    a.heartbeat()
    assert refused(a, active_tasks=[{"subtopology_id": "9", "partitions": [0]}])[0] == INVALID_REQUEST


def test_a_member_that_stops_heartbeating_is_removed_and_its_tasks_move(client):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=2)
    a, b = (Member(client, app, stateful_topology(source, app)) for _ in range(2))
    a.join()
    a.heartbeat()
    b.join()
    settle(a, b)
    assert len(a.active) == len(b.active) == 1

    def a_removed() -> bool:
        b.heartbeat()  # b stays; a, silent, runs out of session
        return [m.member_id for m in describe(client, app).members] == [b.member_id]

    wait_until(a_removed, "the silent member removed", timeout=SESSION_MS / 1000 + 10)
    settle(b)
    assert b.active == {("0", 0), ("0", 1)} and b.standby == set(), "no other process for a standby"


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_removed(client):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=2)
    a, b = (Member(client, app, stateful_topology(source, app)) for _ in range(2))
    a.heartbeat(rebalance_timeout=1500)
    a.heartbeat()
    b.join()
    revoking = a.heartbeat()
    assert len(a.active) == 1, "a is asked to give one task up"
    kept = {("0", 0), ("0", 1)}

    def a_removed() -> bool:
        r = a.request(active_tasks=as_ids(kept))  # still reporting both: it never revokes
        return r.error_code == UNKNOWN_MEMBER_ID

    wait_until(a_removed, "the member that never revoked removed", timeout=30)
    settle(b)
    assert b.active == kept and revoking.member_epoch == 2


def test_a_static_member_keeps_its_tasks_while_away_and_takes_them_back_under_a_new_id(client):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=2)
    a, b = (Member(client, app, stateful_topology(source, app)) for _ in range(2))
    a.heartbeat(instance_id="instance-a")
    a.heartbeat()
    b.join()
    settle(a, b)
    held, epoch = set(a.active), describe(client, app).group_epoch
    r = a.request(epoch=-2, instance_id="instance-a")
    assert (r.error_code, r.member_epoch) == (NONE, -2)
    settle(b)
    assert not b.active & held, "a static member that stepped out keeps its tasks"
    holder, late = Member(client, app, a.topology), Member(client, app, a.topology)
    holder.heartbeat(instance_id="instance-b")
    r = late.request(instance_id="instance-b")
    assert (r.error_code, r.error_message) == (UNRELEASED_INSTANCE_ID, f"Static member {late.member_id} with instance "
                                               f"id instance-b cannot join the group because the instance id is "
                                               f"owned by {holder.member_id} member.")
    holder.leave()
    back = Member(client, app, a.topology, process=a.process)
    back.heartbeat(instance_id="instance-a")
    assert back.active == held and describe(client, app).group_epoch == epoch + 2, \
        "it takes its tasks back; only the other static member's coming and going moved the epoch"
    assert a.request(epoch=a.epoch, instance_id="instance-a").error_code == FENCED_INSTANCE_ID
    assert back.request(instance_id="instance-z", epoch=back.epoch).error_code == UNKNOWN_MEMBER_ID


# --- the group as the other group APIs see it ---------------------------------------------------

def test_members_commit_and_fetch_offsets_at_their_epochs(client):
    """Kafka Streams commits its tasks' offsets with OffsetCommit v9+, naming its member epoch."""
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=1)
    a = Member(client, app, stateful_topology(source, app))
    a.join()
    a.heartbeat()
    assert commit(client, app, source, 7, a.epoch, a.member_id) == NONE
    assert commit(client, app, source, 8, a.epoch + 1, a.member_id) == STALE_MEMBER_EPOCH
    assert commit(client, app, source, 8, a.epoch, "stranger") == UNKNOWN_MEMBER_ID
    assert commit(client, app, source, 8, -1, "") == UNKNOWN_MEMBER_ID  # not while it has members
    assert commit(client, app, source, 8, a.epoch, a.member_id, version=8) == UNSUPPORTED_VERSION
    g = fetch(client, app, a.member_id, a.epoch)
    assert (g.error_code, g.topics[0].partitions[0].committed_offset) == (NONE, 7)
    assert fetch(client, app, a.member_id, a.epoch - 1).error_code == STALE_MEMBER_EPOCH
    assert fetch(client, app).error_code == NONE  # an admin reads without naming a member
    assert offset_delete(client, 0, app, {source: [0]}) == (NONE, {(source, 0): GROUP_SUBSCRIBED_TO_TOPIC})
    a.leave()
    assert commit(client, app, source, 9, -1, "") == NONE  # an empty group takes a simple commit
    assert offset_delete(client, 0, app, {source: [0]}) == (NONE, {(source, 0): NONE})


@over_versions(DESCRIBE)
def test_describe_shows_topology_members_and_assignments(client, version):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=2)
    a = Member(client, app, stateful_topology(source, app))
    a.join()
    a.heartbeat(task_offsets=[{"subtopology_id": "0", "partition": 1, "offset": 40}],
                task_end_offsets=[{"subtopology_id": "0", "partition": 1, "offset": 42}])
    g = describe(client, app, version)
    assert (g.error_code, g.group_id, g.group_state, g.group_epoch, g.assignment_epoch) == (NONE, app, "Stable", 2, 2)
    (sub,) = g.topology.subtopologies
    assert (g.topology.epoch, sub.subtopology_id, sub.source_topics) == (1, "0", (source,))
    (changelog,) = sub.state_changelog_topics
    assert (changelog.name, changelog.partitions) == (f"{app}-store-changelog", 2)
    (m,) = g.members
    assert (m.member_id, m.member_epoch, m.process_id, m.topology_epoch, m.is_classic) == (
        a.member_id, 2, a.process, 1, False)
    assert tasks_of(m.assignment.active_tasks) == tasks_of(m.target_assignment.active_tasks) == a.active
    assert [(o.subtopology_id, o.partition, o.offset) for o in m.task_offsets + m.task_end_offsets] == [
        ("0", 1, 40), ("0", 1, 42)], "the task offsets the member last reported"
    missing = describe(client, new_group(), version)
    assert (missing.error_code, missing.error_message) == (GROUP_ID_NOT_FOUND, f"Group {missing.group_id} not found.")


def test_list_groups_and_describe_groups_see_a_streams_group(client):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=1)
    Member(client, app, stateful_topology(source, app)).join()
    listed = client.request(LIST_GROUPS, 5, states_filter=[], types_filter=["streams"]).groups
    assert [(g.group_id, g.protocol_type, g.group_type) for g in listed if g.group_id == app] == [
        (app, "streams", "streams")]
    (d,) = client.request(DESCRIBE_GROUPS, 6, groups=[app], include_authorized_operations=False).groups
    assert (d.error_code, d.error_message, d.group_state) == (GROUP_ID_NOT_FOUND, f"Group {app} is not a classic group.",
                                                               "Dead")


def test_a_group_id_of_another_type_is_refused_both_ways(client):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=1)
    a = Member(client, app, stateful_topology(source, app))
    a.join()
    r = client.request(CONSUMER_HEARTBEAT, 1, group_id=app, member_id=str(uuid.uuid4()), member_epoch=0,
                       rebalance_timeout=30_000, subscribed_topic_names=[source], topic_partitions=[])
    assert (r.error_code, r.error_message) == (GROUP_ID_NOT_FOUND, f"Group {app} is not a consumer group.")
    r = client.request(SHARE_HEARTBEAT, 1, group_id=app, member_id=str(uuid.uuid4()), member_epoch=0, rack_id=None,
                       subscribed_topic_names=[source])
    assert (r.error_code, r.error_message) == (GROUP_ID_NOT_FOUND, f"Group {app} is not a share group.")
    consumer_group = new_group()
    r = client.request(CONSUMER_HEARTBEAT, 1, group_id=consumer_group, member_id=str(uuid.uuid4()), member_epoch=0,
                       rebalance_timeout=30_000, subscribed_topic_names=[source], topic_partitions=[])
    assert r.error_code == NONE
    b = Member(client, consumer_group, stateful_topology(source, consumer_group))
    r = b.request()
    assert (r.error_code, r.error_message) == (GROUP_ID_NOT_FOUND, f"Group {consumer_group} is not a streams group.")
    d = describe(client, consumer_group)
    assert (d.error_code, d.error_message) == (GROUP_ID_NOT_FOUND, f"Group {consumer_group} is not a streams group.")
    r = client.request(JOIN_GROUP, 9, group_id=app, session_timeout=10_000, rebalance_timeout=10_000, member_id="",
                       group_instance_id=None, protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}],
                       reason=None)
    assert r.error_code == INCONSISTENT_GROUP_PROTOCOL
    (deleted,) = client.request(DELETE_GROUPS, 2, groups_names=[app]).results
    assert deleted.error_code == NON_EMPTY_GROUP
    a.leave()
    (deleted,) = client.request(DELETE_GROUPS, 2, groups_names=[app]).results
    assert deleted.error_code == NONE
    assert describe(client, app).error_code == GROUP_ID_NOT_FOUND


def test_the_group_survives_a_broker_restart(broker, client):
    app = new_group()
    source = unique_topic("streams-in")
    client.create_topic(source, partitions=4)
    a = Member(client, app, repartitioning_topology(source, app))
    a.join()
    a.heartbeat()
    b = Member(client, app, a.topology)
    b.join()
    settle(a, b)
    b.heartbeat(user_endpoint={"host": "b.example", "port": 50_000}, client_tags=[{"key": "zone", "value": "z1"}])
    settle(a, b)  # new metadata moved the group epoch: the members reconcile to it
    before = describe(client, app)
    assert before.group_state == "Stable"
    client.close()
    broker.stop()
    broker.start()
    with Client.to(broker) as again:
        after = describe(again, app)
        assert (after.group_epoch, after.assignment_epoch, after.group_state) == \
            (before.group_epoch, before.assignment_epoch, "Stable")
        assert after.topology == before.topology
        assert sorted(after.members, key=lambda m: m.member_id) == sorted(before.members, key=lambda m: m.member_id)
        a.client = b.client = again
        active_before = (set(a.active), set(b.active))
        settle(a, b, rounds=2)  # both carry on at their epochs: nobody is fenced, nothing moves
        assert (a.active, b.active) == active_before
        a.leave()
        settle(b)
        assert b.active == {(s, p) for s in "01" for p in range(4)}
