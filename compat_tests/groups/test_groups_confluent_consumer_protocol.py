"""Consumer groups through confluent-kafka (librdkafka) with `group.protocol=consumer` (KIP-848).

The same scenarios as test_groups_confluent.py (group_scenarios.py), with the member choosing the
new protocol: the broker assigns partitions and the session and heartbeat timings are the
broker's (group.consumer.session.timeout.ms 6 s, heartbeat 1 s here, the scenarios' figures),
as librdkafka refuses session.timeout.ms and heartbeat.interval.ms with this protocol. Plus
what only this protocol does: a second member takes its share while the first keeps consuming
the partitions it keeps, and a regex subscription picks up a topic created later.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException

from compat_tests.helpers import confluent_group_members, group_scenarios as gs
from compat_tests.helpers.confluent_consumer_protocol_members import ConsumerProtocolMember, make_member
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(150)

FACTORY = f"{__name__}:make_member"


BROKER_ARGS = [
    *gs.GROUP_BROKER_ARGS,
    "--group-consumer-session-timeout-ms", str(gs.SESSION_TIMEOUT_MS),
    "--group-consumer-min-session-timeout-ms", str(gs.SESSION_TIMEOUT_MS),
    "--group-consumer-heartbeat-interval-ms", str(gs.HEARTBEAT_MS),
    "--group-consumer-min-heartbeat-interval-ms", str(gs.HEARTBEAT_MS)]


def consumer(bootstrap: str, group: str, name: str) -> Consumer:
    return confluent_group_members.consumer(bootstrap, group, name, ConsumerProtocolMember.group_settings)


def test_three_members_share_six_partitions_exactly_once(broker):
    gs.scenario_three_members_exactly_once(broker.bootstrap, make_member, "kip848-g3")


def test_clean_leave_moves_partitions_without_redelivering_committed(broker):
    gs.scenario_clean_leave(broker.bootstrap, make_member, "kip848-leave")


def test_killed_member_partitions_move_after_session_timeout(broker):
    gs.scenario_member_killed(broker.bootstrap, make_member, FACTORY, "kip848-kill")


def test_commits_resume_after_a_broker_restart(broker):
    gs.scenario_resume_after_restart(broker, make_member, "kip848-restart", "stop")


def test_a_second_member_takes_its_share_while_the_first_keeps_consuming(broker):
    bootstrap = broker.bootstrap
    topic, group = gs.new_topic(bootstrap, "kip848-split"), gs.new_group("kip848-split")
    [first] = gs.start_members(bootstrap, make_member, topic, group, ["split-first"])
    members = [first]
    tracker = gs.Tracker()
    try:
        gs.pump(members, tracker, gs.balanced(members, [gs.PARTITIONS]), 30, "the first member gets everything")
        produced = gs.produce(bootstrap, topic, 1, 300)
        gs.pump(members, tracker, gs.covered(tracker, produced), 30, "batch 1 consumed by the first member")
        # The first member's assignment is watched from here on: with this protocol it only
        # shrinks to what it keeps, it is never taken away whole for a rebalance.
        seen: list[set[int]] = []
        members.append(gs.RunningMember(make_member(bootstrap, topic, group, "split-second"), True))

        def split() -> bool:
            seen.append(first.assignment())
            return gs.balanced(members, [3, 3])()

        gs.pump(members, tracker, split, 30, "the second member takes 3 of the 6 partitions")
        assert all(len(s) >= 3 for s in seen), f"the first member's assignment went through {seen}"
        kept = first.assignment()
        produced.update(gs.produce(bootstrap, topic, 2, 300))
        gs.pump(members, tracker, gs.covered(tracker, produced), 30, "batch 2 consumed by both")
        gs.settle(members, tracker)
        gs.assert_exactly_once(produced, tracker.deliveries)
        assert {d.partition for d in tracker.of("split-first") if d.value.startswith("b2-")} == kept
    finally:
        gs.close_all(members)


def test_a_regex_subscription_picks_up_a_topic_created_later(broker):
    bootstrap = broker.bootstrap
    prefix = unique_topic("kip848-re")
    create_topic(bootstrap, prefix + "-a", 1)
    c = consumer(bootstrap, gs.new_group("kip848-re"), "regex-member")
    try:
        c.subscribe([f"^{prefix}-.*"])
        later = create_topic(bootstrap, prefix + "-b", 2)
        gs.produce(bootstrap, later, 1, 2)  # one record per partition of the later topic (i % 6)
        got, deadline = set(), time.monotonic() + 40
        while len(got) < 2 and time.monotonic() < deadline:
            for msg in c.consume(num_messages=100, timeout=1):
                if msg.error():
                    raise KafkaException(msg.error())
                got.add((msg.topic(), msg.partition(), msg.value()))
        assert got == {(later, 0, b"b1-00000"), (later, 1, b"b1-00001")}, got
    finally:
        c.close()


def test_a_classic_member_and_a_new_one_share_a_group_as_it_upgrades_and_downgrades(broker):
    """Kafka 4's mixed groups: a classic confluent-kafka consumer's group becomes a consumer group
    when a group.protocol=consumer member joins, the two split the partitions, and the group is
    classic again when the new member leaves: every record is read once, none skipped."""
    bootstrap = broker.bootstrap
    topic, group = gs.new_topic(bootstrap, "kip848-mixed"), gs.new_group("kip848-mixed")
    classic = gs.RunningMember(confluent_group_members.make_member(bootstrap, topic, group, "mixed-classic"))
    members = [classic]
    tracker = gs.Tracker()
    try:
        gs.pump(members, tracker, gs.balanced(members, [gs.PARTITIONS]), 30, "the classic member gets everything")
        produced = gs.produce(bootstrap, topic, 1, 300)
        gs.pump(members, tracker, gs.covered(tracker, produced), 30, "batch 1 consumed by the classic member")
        new = gs.RunningMember(make_member(bootstrap, topic, group, "mixed-new"))
        members.append(new)
        gs.pump(members, tracker, gs.balanced(members, [3, 3]), 40, "the new member takes 3 of the 6 partitions")
        assert group_type(broker, group) == "consumer"
        produced.update(gs.produce(bootstrap, topic, 2, 300))
        gs.pump(members, tracker, gs.covered(tracker, produced), 30, "batch 2 consumed by both")
        assert {d.member for d in tracker.deliveries if d.value.startswith("b2-")} == {"mixed-classic", "mixed-new"}
        new.close()
        members.remove(new)
        gs.pump(members, tracker, gs.balanced(members, [gs.PARTITIONS]), 40,
                "the classic member takes everything back once the group is classic again")
        assert group_type(broker, group) == "classic"
        produced.update(gs.produce(bootstrap, topic, 3, 300))
        gs.pump(members, tracker, gs.covered(tracker, produced), 30, "batch 3 consumed by the classic member")
        gs.settle(members, tracker)
        gs.assert_exactly_once(produced, tracker.deliveries)
    finally:
        gs.close_all(members)


def group_type(broker, group: str) -> str | None:
    with Client.to(broker) as client:
        listed = client.request(16, 5, states_filter=[], types_filter=[]).groups
    return {g.group_id: g.group_type for g in listed}.get(group)
