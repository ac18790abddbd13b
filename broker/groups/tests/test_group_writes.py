"""Each group kind's own records are operations of their group's `__consumer_offsets` partition
in the coordinator runtime (group_writes.py): queued behind the partition's operations before
them, replayed into their group kind and written in the same write path, answered once every
in-sync replica has them; a write that fails answers the runtime's coordinator error (Kafka 4's
group coordinator's) and puts the group back as the log holds it.

Real parts below the coordinators (group_broker.py): real Partitions made leader as the replica
manager does, a real engine, the real write path; a follower's progress as its fetches report it.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

import pytest

from wire.error_codes import ErrorCode

from broker.coordinator.clock import ManualClock
from broker.groups import offsets_log
from broker.groups.offsets import OffsetToCommit
from broker.groups.consumer import classic_apis
from broker.groups.consumer.heartbeat_request import HeartbeatRequest
from broker.groups.consumer import records as consumer_records
from broker.groups.share import share_group_records as share_records
from broker.groups.share.share_group_changes import Said, said_by
from broker.groups.streams import records as streams_records
from broker.groups.streams.heartbeat_request import StreamsHeartbeat
from broker.groups.streams.tasks import Tasks
from broker.groups.streams.topology import Subtopology, Topology
from broker.groups.tests.group_broker import (OTHER, PARTITIONS, GroupBroker, coordinators, lead, offsets_store,
                                              settled)
from broker.storage.modes import MODES

COMMITTING = "committing"


def _beside(group_id: str, prefix: str) -> str:
    """Another group id in `group_id`'s partition."""
    return next(g for g in (f"{prefix}-{i}" for i in range(1000))
                if offsets_log.partition_for(g, PARTITIONS) == offsets_log.partition_for(group_id, PARTITIONS))


CONSUMING = _beside(COMMITTING, "consuming")
STREAMING = _beside(COMMITTING, "streaming")
SHARING = _beside(COMMITTING, "sharing")


@pytest.fixture(params=MODES)
def broker(tmp_path, request):
    b = GroupBroker(tmp_path, request.param)
    yield b
    b.storage.close()


def _consumer_join(group_id: str, member_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(group_id, member_id, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                            owned={})


def _log_keys(broker, group_id: str) -> list[bytes]:
    """The keys of the group's partition's records, in log order, as the next leader reads them."""
    store = offsets_store(broker, PARTITIONS, ManualClock())
    return [r.key for r in store.replay_partition(broker.partition(group_id))]


async def _replicated(partition, answer: asyncio.Future):
    """`answer`, the follower fetching whatever the leader appends meanwhile."""
    while not answer.done():
        partition.follower_fetched(OTHER, partition.log_end_offset)
        await asyncio.sleep(0)
    return await answer


async def _written_after_a_commit_before_it(broker, c, group_id: str, change: Callable[[], Awaitable], key: bytes):
    """`change()`'s answer, sent to `group_id` while a commit to its partition waits for the
    follower: its records are queued behind the commit's write, not appended beside it."""
    partition = broker.partition(COMMITTING)
    commit = asyncio.ensure_future(c.offsets.commit(COMMITTING, -1, "", None, [OffsetToCommit("t", 0, 7, -1, "")]))
    await settled(lambda: partition.log_end_offset > partition.high_watermark, "the commit appended")
    committed_to = partition.log_end_offset
    changing = asyncio.ensure_future(change())
    for _ in range(100):
        await asyncio.sleep(0)
    assert partition.log_end_offset == committed_to  # queued behind the commit's write
    assert not changing.done() and not commit.done()
    answer = await _replicated(partition, changing)
    assert await commit == [ErrorCode.none]
    keys = _log_keys(broker, group_id)
    assert keys[0] == offsets_log.offset_key(COMMITTING, "t", 0) and key in keys[1:]
    return answer


def _commits_wait_for_the_follower(broker) -> None:
    lead(broker.partition(COMMITTING), epoch=1, isr=(1, OTHER))


def test_a_consumer_heartbeat_is_written_in_its_partition_s_turn_after_a_commit_before_it(broker):
    _commits_wait_for_the_follower(broker)

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await _written_after_a_commit_before_it(
            broker, c, CONSUMING, lambda: c.consumer.heartbeat(_consumer_join(CONSUMING, "m1")),
            consumer_records.key(consumer_records.GROUP_METADATA, CONSUMING))
        assert (joined.error, joined.member_epoch) == (ErrorCode.none, 1)

    asyncio.run(scenario())


async def _joined_and_left(c, partition):
    """CONSUMING, empty once its one member joined and left."""
    joined = await _replicated(partition, asyncio.ensure_future(c.consumer.heartbeat(
        _consumer_join(CONSUMING, "m1"))))
    left = await _replicated(partition, asyncio.ensure_future(c.consumer.heartbeat(HeartbeatRequest(
        CONSUMING, joined.member_id, -1, rebalance_timeout_ms=30_000))))
    assert left.error is ErrorCode.none
    group = c.consumer.groups[CONSUMING]
    assert not group.members
    return group


def test_a_consumer_group_deletion_whose_write_times_out_answers_coordinator_not_available(broker):
    """Kafka 4's group coordinator maps REQUEST_TIMED_OUT to COORDINATOR_NOT_AVAILABLE, and keeps
    what the leader's log appended: the group is gone, here as in the log the next leader reads."""
    partition = broker.partition(CONSUMING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock(), commit_timeout_s=0.2)
        c.loading.sync()
        group = await _joined_and_left(c, partition)
        assert await classic_apis.delete(c.consumer, group) is ErrorCode.coordinator_not_available
        assert CONSUMING not in c.consumer.groups and group.dead
        successor = coordinators(broker, ManualClock())
        successor.loading.sync()
        assert CONSUMING not in successor.consumer.groups

    asyncio.run(scenario())


def test_a_consumer_group_holds_what_its_records_say_also_when_their_write_times_out(broker):
    """The runtime replays a heartbeat's records into the group: a write the log appended but did
    not replicate in time leaves the group as the log has it, the same group a successor loads."""
    partition = broker.partition(CONSUMING)
    lead(partition, epoch=1, isr=(1, OTHER))

    def seen(group):
        return (group.epoch, group.assignment_epoch, group.targets, group.topics, group.holders,
                {mid: (m.metadata, m.current) for mid, m in group.members.items()})

    async def scenario():
        c = coordinators(broker, ManualClock(), commit_timeout_s=0.2)
        c.loading.sync()
        first = await _replicated(partition, asyncio.ensure_future(c.consumer.heartbeat(
            _consumer_join(CONSUMING, "m1"))))
        assert first.error is ErrorCode.none
        timed_out = await c.consumer.heartbeat(_consumer_join(CONSUMING, "m2"))  # the follower never fetches it
        assert timed_out.error is ErrorCode.coordinator_not_available
        group = c.consumer.groups[CONSUMING]
        assert set(group.members) == {"m1", "m2"} and group.epoch == 2  # as the leader's log has it
        successor = coordinators(broker, ManualClock())
        successor.loading.sync()
        assert seen(successor.consumer.groups[CONSUMING]) == seen(group)

    asyncio.run(scenario())


def test_a_consumer_group_deletion_the_log_refuses_leaves_the_group(tmp_path):
    broker = GroupBroker(tmp_path, "segment", offsets_configs={"min.insync.replicas": "2"})
    partition = broker.partition(CONSUMING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        group = await _joined_and_left(c, partition)
        epoch = group.epoch
        lead(partition, epoch=2, isr=(1,))  # below min.insync.replicas: nothing is appended
        assert await classic_apis.delete(c.consumer, group) is ErrorCode.coordinator_not_available
        assert c.consumer.groups.get(CONSUMING) is group and not group.dead and group.epoch == epoch

    try:
        asyncio.run(scenario())
    finally:
        broker.storage.close()


def test_a_streams_heartbeat_is_written_in_its_partition_s_turn_after_a_commit_before_it(broker):
    _commits_wait_for_the_follower(broker)
    topology = Topology(0, (Subtopology("0", ("t",)),))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await _written_after_a_commit_before_it(
            broker, c, STREAMING, lambda: c.streams.heartbeat(StreamsHeartbeat(
                STREAMING, "s1", 0, rebalance_timeout_ms=30_000, topology=topology, owned=Tasks(), process_id="p")),
            streams_records.key(streams_records.GROUP_METADATA, STREAMING))
        assert joined.error is ErrorCode.none

    asyncio.run(scenario())


def _streams_join(member_id: str) -> StreamsHeartbeat:
    return StreamsHeartbeat(STREAMING, member_id, 0, rebalance_timeout_ms=30_000,
                            topology=Topology(0, (Subtopology("0", ("t",)),)), owned=Tasks(), process_id=member_id)


def _streams_seen(group):
    """What a streams group's records hold, and the topology as configured against the topics."""
    return (group.epoch, group.assignment_epoch, group.validated_epoch, group.targets, group.topology,
            group.configured, {mid: (m.metadata, m.current) for mid, m in group.members.items()})


def test_a_streams_group_holds_what_its_records_say_also_when_their_write_times_out(broker):
    """The runtime replays a streams heartbeat's records into the group: a write the log appended
    but did not replicate in time leaves the group as the log has it, the same group a successor
    loads."""
    partition = broker.partition(STREAMING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock(), commit_timeout_s=0.2)
        c.loading.sync()
        first = await _replicated(partition, asyncio.ensure_future(c.streams.heartbeat(_streams_join("s1"))))
        assert first.error is ErrorCode.none
        timed_out = await c.streams.heartbeat(_streams_join("s2"))  # the follower never fetches it
        assert timed_out.error is ErrorCode.coordinator_not_available
        group = c.streams.groups[STREAMING]
        assert set(group.members) == {"s1", "s2"} and group.epoch == 2  # as the leader's log has it
        successor = coordinators(broker, ManualClock())
        successor.loading.sync()
        assert _streams_seen(successor.streams.groups[STREAMING]) == _streams_seen(group)

    asyncio.run(scenario())


def test_a_streams_group_deletion_whose_write_times_out_keeps_what_the_log_appended(broker):
    """As a consumer group's: the group is gone, here as in the log the next leader reads, and
    dead to whoever still holds it."""
    partition = broker.partition(STREAMING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock(), commit_timeout_s=0.2)
        c.loading.sync()
        joined = await _replicated(partition, asyncio.ensure_future(c.streams.heartbeat(_streams_join("s1"))))
        left = await _replicated(partition, asyncio.ensure_future(c.streams.heartbeat(StreamsHeartbeat(
            STREAMING, "s1", -1, rebalance_timeout_ms=30_000))))
        assert joined.error is ErrorCode.none and left.error is ErrorCode.none
        group = c.streams.groups[STREAMING]
        assert not group.members
        assert await c.streams.delete(STREAMING) is ErrorCode.coordinator_not_available
        assert STREAMING not in c.streams.groups and group.dead
        successor = coordinators(broker, ManualClock())
        successor.loading.sync()
        assert STREAMING not in successor.streams.groups

    asyncio.run(scenario())


def test_a_streams_heartbeat_the_log_refuses_leaves_the_group_as_it_was(tmp_path):
    """Nothing appended: the runtime puts the group back as its log holds it, and the member the
    refused heartbeat added is not in it."""
    broker = GroupBroker(tmp_path, "segment", offsets_configs={"min.insync.replicas": "2"})
    partition = broker.partition(STREAMING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        first = await _replicated(partition, asyncio.ensure_future(c.streams.heartbeat(_streams_join("s1"))))
        assert first.error is ErrorCode.none
        group = c.streams.groups[STREAMING]
        before = _streams_seen(group)
        lead(partition, epoch=2, isr=(1,))  # below min.insync.replicas: nothing is appended
        refused = await c.streams.heartbeat(_streams_join("s2"))
        assert refused.error is ErrorCode.coordinator_not_available
        assert c.streams.groups.get(STREAMING) is group and _streams_seen(group) == before
        assert group.members["s1"].expiry is not None

    try:
        asyncio.run(scenario())
    finally:
        broker.storage.close()


def test_a_share_heartbeat_is_written_in_its_partition_s_turn_after_a_commit_before_it(broker):
    _commits_wait_for_the_follower(broker)

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await _written_after_a_commit_before_it(
            broker, c, SHARING, lambda: c.share.heartbeat(SHARING, "sh1", 0, ("t",), None, "client", "/127.0.0.1"),
            share_records.key(share_records.GROUP_METADATA, SHARING))
        assert joined.error is ErrorCode.none and joined.member_id == "sh1"
        c.share.close()

    asyncio.run(scenario())


def _share_join(c, member_id: str):
    return c.share.heartbeat(SHARING, member_id, 0, ("t",), None, "client", "/127.0.0.1")


def _share_group_loaded(broker) -> Said | None:
    """What SHARING's records say as a successor loads them from the leader's log."""
    successor = coordinators(broker, ManualClock())
    successor.loading.sync()
    group = successor.share.groups.get(SHARING)
    successor.share.close()
    return None if group is None else said_by(group)


def test_a_share_group_holds_what_its_records_say_also_when_their_write_times_out(broker):
    """The runtime replays a share heartbeat's records into the group: a join the log appended but
    did not replicate in time leaves the member in the group as the log has it (the group a
    successor loads), with a session, so one that never comes back is fenced at its timeout."""
    partition = broker.partition(SHARING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        clock = ManualClock()
        c = coordinators(broker, clock, commit_timeout_s=0.2, group_share_session_timeout_ms=2000,
                         group_share_heartbeat_interval_ms=500)
        c.loading.sync()
        first = await _replicated(partition, asyncio.ensure_future(_share_join(c, "sh1")))
        assert first.error is ErrorCode.none
        timed_out = await _share_join(c, "sh2")  # the follower never fetches it
        assert timed_out.error is ErrorCode.coordinator_not_available
        group = c.share.groups[SHARING]
        assert set(group.members) == {"sh1", "sh2"} and group.epoch > first.member_epoch  # as the leader's log has it
        assert _share_group_loaded(broker) == said_by(group)
        clock.advance(2000)  # neither heartbeats again: both are fenced, their tombstones replicated
        fenced = asyncio.ensure_future(settled(lambda: not group.members and SHARING not in c.share._writing,
                                               "both members fenced and written"))
        await _replicated(partition, fenced)
        assert _share_group_loaded(broker) == said_by(group)
        c.share.close()

    asyncio.run(scenario())


def test_a_share_join_the_log_refuses_leaves_the_group_as_its_log_holds_it(tmp_path):
    broker = GroupBroker(tmp_path, "segment", offsets_configs={"min.insync.replicas": "2"})
    partition = broker.partition(SHARING)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        assert (await _replicated(partition, asyncio.ensure_future(_share_join(c, "sh1")))).error is ErrorCode.none
        group = c.share.groups[SHARING]
        held = said_by(group)
        lead(partition, epoch=2, isr=(1,))  # below min.insync.replicas: nothing is appended
        assert (await _share_join(c, "sh2")).error is ErrorCode.coordinator_not_available
        assert c.share.groups[SHARING] is group and said_by(group) == held == _share_group_loaded(broker)
        c.share.close()

    try:
        asyncio.run(scenario())
    finally:
        broker.storage.close()


SHARING_ELSEWHERE = next(g for g in (f"sharing-elsewhere-{i}" for i in range(1000))
                         if offsets_log.partition_for(g, PARTITIONS) != offsets_log.partition_for(SHARING, PARTITIONS))


def test_share_groups_of_different_partitions_write_concurrently(broker):
    """One share group's write waiting for a follower that does not fetch holds no share group of
    another partition (Kafka's share groups write in their own partitions' queues)."""
    held = broker.partition(SHARING)
    lead(held, epoch=1, isr=(1, OTHER))  # a write counts once OTHER fetched it: it does not here
    lead(broker.partition(SHARING_ELSEWHERE), epoch=1)

    async def scenario():
        c = coordinators(broker, ManualClock(), commit_timeout_s=60)  # the held write outlasts the test
        c.loading.sync()
        waiting = asyncio.ensure_future(c.share.heartbeat(SHARING, "sh1", 0, ("t",), None, "client", "/127.0.0.1"))
        await settled(lambda: held.log_end_offset > 0, "the held group's records in the log")
        other = await asyncio.wait_for(
            c.share.heartbeat(SHARING_ELSEWHERE, "sh2", 0, ("t",), None, "client", "/127.0.0.1"), 10)
        assert other.error is ErrorCode.none and other.member_id == "sh2"
        assert not waiting.done()
        held.follower_fetched(OTHER, held.log_end_offset)
        assert (await asyncio.wait_for(waiting, 10)).error is ErrorCode.none
        assert c.share._writing == {}  # a group's turn goes with its last write
        c.share.close()

    asyncio.run(scenario())
