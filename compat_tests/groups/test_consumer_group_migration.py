"""Kafka 4's mixed groups over a raw socket: a classic group upgraded when a member of the new
protocol (ConsumerGroupHeartbeat) joins, its classic members carrying on through JoinGroup,
SyncGroup and Heartbeat inside the consumer group, and the group classic again when the last
member of the new protocol leaves (group.consumer.migration.policy bidirectional, Kafka's default).

The classic members speak the consumer protocol as clients do: a ConsumerProtocolSubscription
v1 (topics, owned partitions) in JoinGroup, a ConsumerProtocolAssignment back from SyncGroup.
The module's broker runs with no initial rebalance delay and a 500 ms consumer heartbeat.
"""

from __future__ import annotations

import struct

from broker.groups.consumer.consumer_protocol import decode_assignment
from compat_tests.helpers.consumer_group_requests import Member, commit, describe, fetch, new_group
from compat_tests.helpers.group_requests import heartbeat, join, sync
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic

NONE, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 0, 22, 27


BROKER_ARGS = [
    "--group-initial-rebalance-delay-ms", "0", "--offsets-topic-partitions", "3",
    "--group-consumer-heartbeat-interval-ms", "500", "--group-consumer-min-heartbeat-interval-ms", "100"]


def subscription(topics: list[str], owned: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolSubscription v1, as a cooperative client sends it."""
    out = struct.pack(">hi", 1, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">ii", -1, len(owned))
    for t, ps in owned.items():
        out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps)) + b"".join(
            struct.pack(">i", p) for p in ps)
    return out


class ClassicMember:
    def __init__(self, client: Client, group: str, topic: str) -> None:
        self.client, self.group, self.topic = client, group, topic
        self.member_id, self.generation, self.owned = "", -1, set()

    def join(self):
        """JoinGroup, then SyncGroup: what it owns afterwards is what the sync gave it."""
        r = join(self.client, self.group, member_id=self.member_id,
                 protocols=[("cooperative-sticky", subscription([self.topic], {self.topic: sorted(self.owned)}))])
        assert r.error_code == NONE, r
        self.member_id, self.generation = r.member_id, r.generation_id
        leader = r.leader == self.member_id
        assignments = [(self.member_id, _assignment(self.topic, range(4)))] if leader else []
        s = sync(self.client, self.group, self.generation, self.member_id, assignments,
                 protocol_name="cooperative-sticky")
        assert s.error_code == NONE, s
        self.owned = set(decode_assignment(s.assignment).get(self.topic, ()))
        return r

    def heartbeat(self) -> int:
        return heartbeat(self.client, self.group, self.generation, self.member_id)


def _assignment(topic: str, partitions) -> bytes:
    ps = list(partitions)
    return (struct.pack(">hih", 1, 1, len(topic)) + topic.encode() + struct.pack(">i", len(ps))
            + b"".join(struct.pack(">i", p) for p in ps) + struct.pack(">i", -1))


def group_type(client: Client, group: str) -> str | None:
    listed = {g.group_id: g.group_type for g in client.request(16, 5, states_filter=[], types_filter=[]).groups}
    return listed.get(group)


def test_a_classic_group_upgrades_and_its_member_shares_with_the_new_one(client):
    topic = unique_topic("mixed")
    topic_id = client.create_topic(topic, partitions=4)
    old = ClassicMember(client, new_group(), topic)
    old.join()
    assert (group_type(client, old.group), old.owned) == ("classic", {0, 1, 2, 3})
    assert commit(client, old.group, topic, 7, old.generation, old.member_id, version=8) == NONE

    new = Member(client, old.group, topics=[topic])
    new.join()
    assert group_type(client, old.group) == "consumer"
    assert new.partitions() == set(), "the classic member still owns every partition"
    assert commit(client, old.group, topic, 8, old.generation, old.member_id, version=8) == NONE, \
        "a classic member commits at its generation, now its member epoch, at any version"
    assert old.heartbeat() == REBALANCE_IN_PROGRESS, "the group epoch moved on: the classic member rejoins"
    before = old.generation
    old.join()  # it still owns all four: the sync says which two it keeps, at its old epoch
    assert len(old.owned) == 2 and old.generation == before
    assert old.heartbeat() == REBALANCE_IN_PROGRESS, "it revoked two: it rejoins to say so"
    old.join()
    assert len(old.owned) == 2 and old.generation == new.epoch
    assert old.heartbeat() == NONE
    new.heartbeat()
    assert new.partitions() == {(topic_id, p) for p in {0, 1, 2, 3} - old.owned}
    types = {m.member_id: m.member_type for m in describe(client, old.group).members}
    assert types == {old.member_id: 0, new.member_id: 1}, "ConsumerGroupDescribe v1: classic 0, consumer 1"
    assert old.heartbeat() == NONE
    assert commit(client, old.group, topic, 9, old.generation - 1, old.member_id, version=8) == ILLEGAL_GENERATION
    assert fetch(client, old.group).topics[0].partitions[0].committed_offset == 8


def test_the_group_is_classic_again_when_the_last_new_member_leaves(broker, client):
    topic = unique_topic("mixed")
    client.create_topic(topic, partitions=4)
    old = ClassicMember(client, new_group(), topic)
    old.join()
    new = Member(client, old.group, topics=[topic])
    new.join()
    for _ in range(2):  # keep two, then report the other two revoked
        assert old.heartbeat() == REBALANCE_IN_PROGRESS
        old.join()
    new.heartbeat()
    assert commit(client, old.group, topic, 5, old.generation, old.member_id, version=8) == NONE
    new.leave()
    assert group_type(client, old.group) == "classic"
    assert old.heartbeat() == REBALANCE_IN_PROGRESS, "a classic rebalance takes over"
    old.join()  # the classic protocol now: it leads and assigns itself every partition
    assert old.owned == {0, 1, 2, 3} and old.heartbeat() == NONE
    client.close()
    broker.stop()
    broker.start()
    with Client.to(broker) as again:
        assert group_type(again, old.group) == "classic"
        assert fetch(again, old.group).topics[0].partitions[0].committed_offset == 5

