"""KIP-848 over a raw socket: ConsumerGroupHeartbeat and ConsumerGroupDescribe at every served
version, and what the older group APIs do with a consumer-protocol group.

Each test drives members by hand the way a client does (join at epoch 0, heartbeat reporting
the partitions it owns, leave at -1) and checks Kafka's outcome: epochs, assignments handed
over only once their previous owner gave them up, the errors that fence a stale member
(FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), and the group as
ConsumerGroupDescribe, ListGroups, OffsetFetch and a restarted broker see it.

The module's broker runs with short consumer-group timings (heartbeat 500 ms, session 3 s)
so a session expiry is seen in seconds.
"""

from __future__ import annotations

import uuid

from compat_tests.helpers.consumer_group_requests import (
    DESCRIBE, HEARTBEAT, INVALID_REQUEST, NONE, UNKNOWN_MEMBER_ID, UNKNOWN_TOPIC_ID, UNSUPPORTED_VERSION, Member,
    commit, describe, fetch, new_group)
from compat_tests.helpers.group_requests import offset_delete
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_markers import producer_id
from compat_tests.helpers.txn_offsets import end_txn, txn_commit
from compat_tests.helpers.txn_requests import end_v2, init, txn_id
from compat_tests.helpers.waiting import wait_until

GROUP_ID_NOT_FOUND, FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR = 69, 110, 112
STALE_MEMBER_EPOCH, INVALID_REGULAR_EXPRESSION, INCONSISTENT_GROUP_PROTOCOL = 113, 128, 23
GROUP_SUBSCRIBED_TO_TOPIC, MEMBER_ID_REQUIRED = 86, 79
HEARTBEAT_MS, SESSION_MS = 500, 3000


BROKER_ARGS = [
    "--offsets-topic-partitions", "3",
    "--group-consumer-heartbeat-interval-ms", str(HEARTBEAT_MS),
    "--group-consumer-min-heartbeat-interval-ms", "100",
    "--group-consumer-session-timeout-ms", str(SESSION_MS),
    "--group-consumer-min-session-timeout-ms", "1000"]


def all_partitions(topic_id: uuid.UUID, count: int) -> set[tuple[uuid.UUID, int]]:
    return {(topic_id, p) for p in range(count)}


def settle(*members: Member, rounds: int = 6) -> None:
    """Heartbeat each member in turn until nothing changes, checking no two ever own one partition."""
    for _ in range(rounds):
        for m in members:
            m.heartbeat()
            owned = [x.partitions() for x in members]
            assert sum(len(o) for o in owned) == len(set().union(*owned)), "two members own one partition"


# --- ConsumerGroupHeartbeat ------------------------------------------------------------------

@over_versions(HEARTBEAT)
def test_one_member_gets_everything_and_a_second_splits_without_the_first_stopping(client, version):
    topic = unique_topic("kip848")
    topic_id = client.create_topic(topic, partitions=4)
    a = Member(client, new_group(), version, topics=[topic])
    r = a.join()
    assert a.member_id and r.member_epoch == 1
    assert int(r.heartbeat_interval.total_seconds() * 1000) == HEARTBEAT_MS
    assert a.partitions() == all_partitions(topic_id, 4)
    b = Member(client, a.group, version, topics=[topic])
    b.join()
    assert b.epoch == 2 and b.partitions() == set(), "b may not get what a still owns"
    revoking = a.heartbeat()
    assert a.epoch == 1 and len(a.partitions()) == 2, "a keeps its epoch and half while it revokes"
    assert revoking.assignment is not None
    a.heartbeat()
    assert a.epoch == 2  # revoked: a moves to the new epoch, never having stopped
    b.heartbeat()
    assert len(b.partitions()) == 2 and not a.partitions() & b.partitions()
    assert a.partitions() | b.partitions() == all_partitions(topic_id, 4)
    # a leaving hands its partitions to b
    a.leave()
    settle(b)
    assert b.partitions() == all_partitions(topic_id, 4)


@over_versions(HEARTBEAT)
def test_requests_kafka_refuses(client, version):
    topic = unique_topic("kip848")
    client.create_topic(topic, partitions=1)
    group = new_group()
    m = Member(client, group, version, topics=[topic])
    assert m.request(rebalance_timeout=-1).error_code == INVALID_REQUEST  # a join without it
    assert m.request(server_assignor="sticky").error_code == UNSUPPORTED_ASSIGNOR
    if version >= 1:
        assert m.request(subscribed_topic_regex="([").error_code == INVALID_REGULAR_EXPRESSION
        assert Member(client, group, version).request(member_id="").error_code == INVALID_REQUEST
    assert m.request(epoch=5, member_id="m").error_code == UNKNOWN_MEMBER_ID  # a group it never joined
    m.join()
    assert m.request(epoch=m.epoch + 1).error_code == FENCED_MEMBER_EPOCH
    stranger = Member(client, group, 1, topics=[topic])
    assert stranger.request(epoch=1).error_code == UNKNOWN_MEMBER_ID


def test_a_member_that_stops_heartbeating_is_removed_after_its_session(client):
    topic = unique_topic("kip848")
    topic_id = client.create_topic(topic, partitions=2)
    a, b = Member(client, new_group(), topics=[topic]), None
    a.join()
    b = Member(client, a.group, topics=[topic])
    b.join()
    # a goes silent: once its session ends, b gets everything
    wait_until(lambda: b.heartbeat() and b.partitions() == all_partitions(topic_id, 2),
               timeout=SESSION_MS / 1000 + 10, what="b to get a's partitions after a's session ended")
    assert a.request().error_code == UNKNOWN_MEMBER_ID


def test_regex_subscription_picks_up_a_topic_created_later(client):
    prefix = unique_topic("kip848-re")
    first = client.create_topic(prefix + "-a", partitions=2)
    m = Member(client, new_group(), regex=f"{prefix}-.*")
    m.join()
    assert m.partitions() == all_partitions(first, 2)
    later = client.create_topic(prefix + "-b", partitions=1)
    wait_until(lambda: m.heartbeat() and (later, 0) in m.partitions(), timeout=10,
               what="the regex to match a topic created after the member joined")
    assert m.partitions() == all_partitions(first, 2) | {(later, 0)}
    assert describe(client, m.group).members[0].subscribed_topic_regex == f"{prefix}-.*"


def test_the_range_assignor_when_members_ask_for_it(client):
    topic = unique_topic("kip848")
    topic_id = client.create_topic(topic, partitions=3)
    group = new_group()
    a = Member(client, group, topics=[topic], assignor="range")
    b = Member(client, group, topics=[topic], assignor="range")
    a.member_id, b.member_id = "a-" + a.member_id, "b-" + b.member_id  # range orders by member id
    a.join()
    b.join()
    settle(a, b)
    assert (a.partitions(), b.partitions()) == ({(topic_id, 0), (topic_id, 1)}, {(topic_id, 2)})
    assert describe(client, group).assignor_name == "range"


# --- ConsumerGroupDescribe -------------------------------------------------------------------

@over_versions(DESCRIBE)
def test_describe(client, version):
    topic = unique_topic("kip848")
    topic_id = client.create_topic(topic, partitions=2)
    m = Member(client, new_group(), topics=[topic])
    m.join()
    g = describe(client, m.group, version)
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == \
        (NONE, "Stable", 1, 1, "uniform")
    (member,) = g.members
    assert (member.member_id, member.member_epoch, member.subscribed_topic_names) == (m.member_id, 1, (topic,))
    for assignment in (member.assignment, member.target_assignment):
        (t,) = assignment.topic_partitions
        assert (t.topic_id, t.topic_name, sorted(t.partitions)) == (topic_id, topic, [0, 1])
    if version >= 1:
        assert member.member_type == 1
    missing = describe(client, new_group(), version)
    assert missing.error_code == GROUP_ID_NOT_FOUND


# --- the older group APIs on a consumer-protocol group --------------------------------------------


def test_commits_are_checked_against_member_epochs(client):
    topic = unique_topic("kip848")
    client.create_topic(topic, partitions=1)
    m = Member(client, new_group(), topics=[topic])
    m.join()
    assert commit(client, m.group, topic, 5, m.epoch, m.member_id) == NONE
    assert commit(client, m.group, topic, 6, m.epoch + 1, m.member_id) == STALE_MEMBER_EPOCH
    assert commit(client, m.group, topic, 6, m.epoch, "stranger") == UNKNOWN_MEMBER_ID
    assert commit(client, m.group, topic, 6, -1, "") == UNKNOWN_MEMBER_ID  # not while it has members
    assert commit(client, m.group, topic, 6, m.epoch, m.member_id, version=8) == UNSUPPORTED_VERSION
    assert fetch(client, m.group, m.member_id, m.epoch + 1).error_code == STALE_MEMBER_EPOCH
    g = fetch(client, m.group, m.member_id, m.epoch)
    assert g.error_code == NONE and g.topics[0].partitions[0].committed_offset == 5
    m.leave()
    assert commit(client, m.group, topic, 7, -1, "") == NONE  # an empty group: anyone may


@over_versions(28)
def test_txn_offset_commit_is_checked_against_member_epochs(client, version):
    topic = unique_topic("kip848")
    client.create_topic(topic, partitions=1)
    m = Member(client, new_group(), topics=[topic])
    m.join()
    tp = (topic, 0)
    if version >= 5:  # transactions V2: the group coordinator adds its partition to a real transaction
        txn = {"tid": txn_id()}
        r = init(client, txn["tid"])
        txn.update(pid=r.producer_id, epoch=r.producer_epoch)
    else:  # the markers are written by hand, as test_txn_offset_commit.py does
        txn = {"tid": "txn-id", "pid": producer_id(client), "epoch": 0}

    def commit_at(offset: int, **member) -> int:
        return txn_commit(client, m.group, txn["pid"], {tp: offset}, version, epoch=txn["epoch"], tid=txn["tid"],
                          **member)[tp]

    def end() -> None:
        if version >= 5:
            error, txn["pid"], txn["epoch"] = end_v2(client, txn["tid"], txn["pid"], txn["epoch"], commit=True)
            assert error == NONE
        else:
            end_txn(client, m.group, txn["pid"], commit_it=True)

    def committed() -> int | None:
        """None until the transaction's offsets are committed: its markers are written after the
        EndTxn answer (transactions V2), and until then OffsetFetch may name no topic."""
        topics = fetch(client, m.group).topics
        return topics[0].partitions[0].committed_offset if topics else None

    if version < 3:  # no member fields: refused while the group has members, as OffsetCommit with epoch -1
        assert commit_at(3) == UNKNOWN_MEMBER_ID
    else:
        assert commit_at(3, generation=m.epoch + 1, member_id=m.member_id) == STALE_MEMBER_EPOCH
        assert commit_at(3, generation=m.epoch, member_id="stranger") == UNKNOWN_MEMBER_ID
        assert commit_at(3, generation=m.epoch, member_id=m.member_id) == NONE
        end()
        wait_until(lambda: committed() == 3, "the committed transaction's offset", timeout=30)
    m.leave()
    assert commit_at(4) == NONE  # an empty group: anyone may
    end()
    wait_until(lambda: committed() == 4, "the committed transaction's offset", timeout=30)


@over_versions(47)
def test_offset_delete_keeps_the_offsets_of_subscribed_topics(client, version):
    named, matched, other = unique_topic("kip848"), unique_topic("kip848"), unique_topic("kip848")
    for topic in (named, matched, other):
        client.create_topic(topic, partitions=1)
    by_name = Member(client, new_group(), topics=[named])
    by_name.join()
    by_regex = Member(client, by_name.group, regex=f"{matched}|no-such-topic")
    by_regex.join()
    assert offset_delete(client, version, by_name.group, {other: [0]}) == (NONE, {(other, 0): NONE}), \
        "a consumer group with nothing committed is still a group"
    by_name.heartbeat()
    for topic in (named, other):
        assert commit(client, by_name.group, topic, 9, by_name.epoch, by_name.member_id) == NONE
    assert commit(client, by_name.group, matched, 9, by_regex.epoch, by_regex.member_id) == NONE
    assert offset_delete(client, version, by_name.group, {named: [0], matched: [0], other: [0]}) == (NONE, {
        (named, 0): GROUP_SUBSCRIBED_TO_TOPIC, (matched, 0): GROUP_SUBSCRIBED_TO_TOPIC, (other, 0): NONE})
    kept = {t.name: t.partitions[0].committed_offset for t in fetch(client, by_name.group).topics}
    assert kept == {named: 9, matched: 9}, kept


@over_versions(15)
def test_describe_groups_reads_a_consumer_protocol_group_as_no_classic_group(client, version):
    """As Kafka's GroupMetadataManager.describeGroups: Dead, and from v6 (KIP-1043)
    GROUP_ID_NOT_FOUND beside it; ConsumerGroupDescribe is the API that describes it."""
    topic = unique_topic("kip848")
    client.create_topic(topic, partitions=1)
    m = Member(client, new_group(), topics=[topic])
    m.join()
    (g,) = client.request(15, version, groups=[m.group], include_authorized_operations=False).groups
    assert (g.group_id, g.group_state, g.members) == (m.group, "Dead", ())
    if version >= 6:
        assert (g.error_code, g.error_message) == (GROUP_ID_NOT_FOUND, f"Group {m.group} is not a classic group.")
    else:
        assert g.error_code == NONE


def test_list_groups_says_consumer_and_a_classic_join_needs_a_readable_subscription(client):
    topic = unique_topic("kip848")
    client.create_topic(topic, partitions=1)
    m = Member(client, new_group(), topics=[topic])
    m.join()
    listed = {g.group_id: g for g in client.request(16, 5, states_filter=[], types_filter=["consumer"]).groups}
    assert (listed[m.group].group_type, listed[m.group].group_state, listed[m.group].protocol_type) == \
        ("consumer", "Stable", "consumer")
    classic = client.request(16, 5, states_filter=[], types_filter=["classic"]).groups
    assert m.group not in {g.group_id for g in classic}
    values = dict(group_id=m.group, session_timeout=10_000, rebalance_timeout=10_000, member_id="",
                  group_instance_id=None, protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}],
                  reason=None)
    first = client.request(11, 9, **values)
    assert first.error_code == MEMBER_ID_REQUIRED
    # A classic member may join (test_consumer_group_migration.py), with a subscription it can read.
    assert client.request(11, 9, **{**values, "member_id": first.member_id}).error_code == INCONSISTENT_GROUP_PROTOCOL


def test_the_group_survives_a_broker_restart(broker, client):
    topic = unique_topic("kip848")
    topic_id = client.create_topic(topic, partitions=2)
    a = Member(client, new_group(), topics=[topic])
    a.join()
    b = Member(client, a.group, topics=[topic])
    b.join()
    settle(a, b)
    assert commit(client, a.group, topic, 42, a.epoch, a.member_id) == NONE
    before = describe(client, a.group)
    client.close()
    broker.stop()
    broker.start()
    with Client.to(broker) as again:
        after = describe(again, a.group)
        assert (after.group_epoch, after.assignment_epoch, after.group_state) == \
            (before.group_epoch, before.assignment_epoch, "Stable")
        assert sorted((m.member_id, m.member_epoch) for m in after.members) == \
            sorted((m.member_id, m.member_epoch) for m in before.members)
        a.client = b.client = again
        settle(a, b, rounds=2)  # both carry on at their epochs: nobody is fenced
        assert a.partitions() | b.partitions() == all_partitions(topic_id, 2)
        assert fetch(again, a.group).topics[0].partitions[0].committed_offset == 42


def test_metadata_finds_a_topic_by_its_id(client):
    """How a KIP-848 consumer learns the names of the topics its assignment names by id."""
    topic = unique_topic("kip848")
    topic_id = client.create_topic(topic, partitions=2)
    missing = uuid.uuid4()
    r = client.request(3, 12, topics=[{"name": None, "topic_id": topic_id}, {"name": None, "topic_id": missing}],
                       allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                       include_topic_authorized_operations=False)
    found = {t.topic_id: t for t in r.topics}
    assert (found[topic_id].error_code, found[topic_id].name, len(found[topic_id].partitions)) == (NONE, topic, 2)
    assert (found[missing].error_code, found[missing].name) == (UNKNOWN_TOPIC_ID, None)
