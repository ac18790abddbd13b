"""Streams groups (KIP-1071) on a real cluster: etcd and three brokers, both layouts.

The coordinator of a streams group is the leader of the group's `__consumer_offsets` partition,
as for every group type. Two members join through it (their topology's changelog topic created
by the cluster's controller), settle, and the coordinator is SIGKILLed. The new leader of the
partition replays the group's records: StreamsGroupDescribe there shows the same epochs,
topology, members and tasks, and the members carry on at their epochs, nobody fenced and no
task moved.
"""

from __future__ import annotations

import uuid

import pytest

from broker.groups import offsets_log
from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import running_cluster
from compat_tests.helpers.group_requests import find_coordinator
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.streams_group_requests import Member, describe, settle, stateful_topology
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(180)

OFFSETS_PARTITIONS = 3
NOT_COORDINATOR = 16


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param, extra_args=("--offsets-topic-partitions", str(OFFSETS_PARTITIONS))) as c:
        yield c


def test_a_streams_group_moves_with_its_offsets_partition_when_the_coordinator_is_killed(cluster):
    group, source = f"app-{uuid.uuid4().hex[:8]}", unique_topic("streams-in")
    cluster.create_topic(source, 4, 3)
    old = wait_until(lambda: find_coordinator(cluster, group), "a coordinator for the group")
    proc = cluster.brokers[old]
    with Client(proc.host, proc.port, timeout=10) as client:
        # FindCoordinator may name a broker before it has loaded the offsets partition it leads.
        wait_until(lambda: describe(client, group).error_code != NOT_COORDINATOR, "the coordinator loaded")
        a, b = (Member(client, group, stateful_topology(source, group)) for _ in range(2))
        a.join()
        wait_until(lambda: a.heartbeat() and a.active, "the changelog created and the tasks assigned")
        b.join()
        settle(a, b)
        before = describe(client, group)
        assert before.group_state == "Stable" and len(a.active) == len(b.active) == 2
    offsets_partition = offsets_log.partition_for(group, OFFSETS_PARTITIONS)
    assert old == cluster.leader(offsets_log.TOPIC, offsets_partition)
    cluster.brokers[old].kill()
    md = cluster.wait_for(lambda md: md["topics"][offsets_log.TOPIC][offsets_partition]["leader"] not in (old, -1),
                          "a new leader of the group's offsets partition")
    new = md["topics"][offsets_log.TOPIC][offsets_partition]["leader"]
    wait_until(lambda: find_coordinator(cluster, group) == new, "FindCoordinator names the new leader")
    proc = cluster.brokers[new]
    with Client(proc.host, proc.port, timeout=10) as client:
        # The new leader answers NOT_COORDINATOR until it has applied its leadership and loaded the partition.
        after = wait_until(lambda: (d := describe(client, group)).error_code != NOT_COORDINATOR and d,
                           "the new coordinator loaded the group")
        assert (after.error_code, after.group_epoch, after.assignment_epoch, after.group_state) == \
            (0, before.group_epoch, before.assignment_epoch, "Stable")
        assert after.topology == before.topology
        assert sorted(after.members, key=lambda m: m.member_id) == sorted(before.members, key=lambda m: m.member_id)
        tasks = (set(a.active), set(b.active))
        a.client = b.client = client
        settle(a, b, rounds=2)  # both carry on at their epochs: nobody is fenced, nothing moves
        assert (a.active, b.active) == tasks
        a.leave()
        settle(b)
        assert b.active == {("0", p) for p in range(4)}
