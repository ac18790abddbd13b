"""KIP-848 consumer groups with the real Apache Kafka Java client (kafka-clients 4.3.0).

The members are GroupCheck JVMs (java_group_members.py, as test_groups_java.py runs them) with
group.protocol=consumer: the broker assigns, and session and heartbeat timings are the
broker's (group.consumer.session.timeout.ms 6 s and heartbeat 1 s here), so the client's own
session.timeout.ms and heartbeat.interval.ms are left out, as the Java client requires. What
is checked is what the new protocol promises: one member gets everything; a second takes its
share while the first keeps consuming the partitions it keeps (its listener only ever revokes
the partitions that move); a member that leaves hands over with no record read twice or
skipped; committed offsets stick across a broker restart.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.java_group_members import (
    PARTITIONS, SESSION_TIMEOUT_MS, GroupMember, assert_exactly_once, assert_no_failures, end_offsets, first_offsets,
    last_assigned, produce, wait_balanced, wait_committed, wait_consumed)
from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(240)

CONSUMER_PROTOCOL = {"group.protocol": "consumer", "session.timeout.ms": None, "heartbeat.interval.ms": None}


@pytest.fixture(scope="module")
def group_broker(storage_mode):
    proc = BrokerProcess(storage_mode=storage_mode, extra_args=[
        "--offsets-topic-partitions", "3",
        "--group-consumer-session-timeout-ms", str(SESSION_TIMEOUT_MS),
        "--group-consumer-min-session-timeout-ms", str(SESSION_TIMEOUT_MS),
        "--group-consumer-heartbeat-interval-ms", "1000",
        "--group-consumer-min-heartbeat-interval-ms", "1000"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def gbroker(group_broker):
    if not group_broker.is_running():
        group_broker.start()
    return group_broker


@pytest.fixture
def members(tmp_path):
    started: list[GroupMember] = []

    def start(bootstrap: str, names, topic: str, group: str) -> list[GroupMember]:
        new = [GroupMember(bootstrap, n, topic, group, tmp_path, **CONSUMER_PROTOCOL) for n in names]
        for m in new:
            assert m.wait_for("started", 30)["groupProtocol"] == "consumer"
        started.extend(new)
        return new

    yield start
    for m in started:
        m.stop()


def test_a_second_member_splits_the_partitions_without_the_first_stopping(gbroker, members):
    topic = create_topic(gbroker.bootstrap, unique_topic("j848-split"), PARTITIONS)
    group = unique_topic("j848-split-g")
    (a,) = members(gbroker.bootstrap, ["a"], topic, group)
    wait_balanced([a])
    first = produce(gbroker.bootstrap, topic, "first", 60)
    wait_consumed([a], first)
    wait_committed([a], end_offsets(first))
    (b,) = members(gbroker.bootstrap, ["b"], topic, group)
    owned = wait_balanced([a, b])
    second = produce(gbroker.bootstrap, topic, "second", 60)
    wait_consumed([a, b], second)
    wait_committed([a, b], end_offsets(first, second))
    revoked = {p for e in a.of("revoked") for p in e["partitions"]}  # before the closes revoke the rest
    for m in (a, b):
        m.close()

    assert_no_failures([a, b])
    assert_exactly_once([a, b], first, second)
    # a was never stopped: its listener revoked only what b took, and it kept reading the rest
    assert revoked == owned["b"], f"a revoked {revoked} while b took {owned['b']}"
    assert not a.of("lost"), a.of("lost")
    assert {p for p, _, v in a.records() if v.startswith("second")} == owned["a"]


def test_a_leaving_member_hands_over_with_nothing_read_twice_or_skipped(gbroker, members):
    topic = create_topic(gbroker.bootstrap, unique_topic("j848-leave"), PARTITIONS)
    group = unique_topic("j848-leave-g")
    a, b = members(gbroker.bootstrap, ["a", "b"], topic, group)
    wait_balanced([a, b])
    first = produce(gbroker.bootstrap, topic, "first", 60)
    wait_consumed([a, b], first)
    wait_committed([a, b], end_offsets(first))
    b_parts, b_commits = b.assignment(), None
    closed = b.close()
    b_commits = b.committed()
    wait_balanced([a], timeout=30)
    moved_at = last_assigned(a)["t"]
    assert moved_at - closed["t"] < SESSION_TIMEOUT_MS, "the leave, not the session timeout, moved b's partitions"
    second = produce(gbroker.bootstrap, topic, "second", 60)
    wait_consumed([a], second)
    wait_committed([a], end_offsets(first, second))
    a.close()

    assert_no_failures([a, b])
    assert_exactly_once([a, b], first, second)
    for p in b_parts:
        assert first_offsets(a, since_t=moved_at).get(p) == b_commits[p], (p, b_commits)


def test_commits_stick_across_a_broker_restart(gbroker, members):
    topic = create_topic(gbroker.bootstrap, unique_topic("j848-restart"), PARTITIONS)
    group = unique_topic("j848-restart-g")
    (a,) = members(gbroker.bootstrap, ["a"], topic, group)
    wait_balanced([a])
    first = produce(gbroker.bootstrap, topic, "first", 60)
    wait_consumed([a], first)
    wait_committed([a], end_offsets(first))
    a.close()
    assert gbroker.stop() == 0, gbroker.log_tail()
    gbroker.start()
    (b,) = members(gbroker.bootstrap, ["b"], topic, group)
    second = produce(gbroker.bootstrap, topic, "second", 60)
    wait_consumed([b], second)
    wait_committed([b], end_offsets(first, second))
    b.close()
    assert_no_failures([a, b])
    assert_exactly_once([a, b], first, second)  # b began at a's commits: nothing again, nothing skipped
