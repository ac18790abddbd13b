"""The group coordinator as a cluster member runs it: it coordinates the groups of the
`__consumer_offsets` partitions it leads, loads them from the log when it becomes leader,
unloads them when it stops leading, and a commit counts once every in-sync replica has it.

Real parts below the coordinator: a cluster member's TopicRegistry on a real engine in a temp
dir, real replica.Partitions made leader / follower the way the replica manager does it
(make_leader / make_follower with the state etcd would hold), followers' progress as their
fetches report it (follower_fetched). Only etcd is left out: `GroupBroker` (group_broker.py)
stands for the broker object, holding the registry and saying the etcd session is alive.
"""

from __future__ import annotations

import asyncio

import pytest

from broker.settings.config_from_settings import config_with
from broker.groups import offsets_log
from broker.groups.offsets import GroupOffsets, OffsetToCommit
from broker.groups.coordinator import GroupCoordinator
from broker.groups.join_messages import JoinRequest
from broker.groups.group_loading import GroupLoading
from broker.groups.group_timers import GroupTimers
from broker.coordinator.clock import Clock, ManualClock, SystemClock
from broker.groups.offsets_store import OffsetsStore
from broker.groups.tests.group_broker import GroupBroker, offsets_store
from wire.error_codes import ErrorCode
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from broker.groups.consumer.heartbeat_request import HeartbeatRequest
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.share.share_partitions import SharePartitions
from broker.groups.streams.coordinator import StreamsGroupCoordinator
from broker.settings.group_configs import share_config_for
from broker.storage.modes import MODES
from replica.partition_state import PartitionState

ME, OTHER = 1, 2
PARTITIONS = 4


async def _until(check, what: str, timeout: float = 10.0) -> None:
    """Let the event loop run the coordinator's tasks until check() holds, not for a guessed time."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.001)



def _groups_in_two_partitions() -> tuple[str, str]:
    a = "group-a"
    b = next(f"group-b{i}" for i in range(100)
             if offsets_log.partition_for(f"group-b{i}", PARTITIONS) != offsets_log.partition_for(a, PARTITIONS))
    return a, b


def _lead(partition, epoch: int, isr=(ME,)) -> None:
    partition.make_leader(PartitionState(ME, epoch, epoch, (ME, OTHER), tuple(isr)))


def _follow(partition, epoch: int) -> None:
    partition.make_follower(PartitionState(OTHER, epoch, epoch, (ME, OTHER), (ME, OTHER)))


async def _commit(offsets: GroupOffsets, group_id: str, offset: int) -> list[str]:
    """A simple commit (generation -1, no member id), as an admin or assign() consumer sends."""
    wanted = [OffsetToCommit("t", 0, offset, -1, None)]
    return await offsets.commit(group_id, -1, "", None, wanted)


def _committed(offsets: GroupOffsets, group_id: str) -> int | None:
    [(_, [(_, value, _)])] = offsets.fetch(group_id, [("t", [0])])
    return None if value is None else value.offset


def _join(group_id: str) -> JoinRequest:
    return JoinRequest(group_id, "", None, "client", "/127.0.0.1", 10_000, 10_000, "consumer",
                       [("range", b"m")], require_known_member=False)


@pytest.fixture(params=MODES)
def cluster_member(tmp_path, request):
    # The committed-to topic "t" lives on another broker (group_broker.py): a coordinator commits
    # offsets of any partition the cluster has, not only of those hosted here.
    member = GroupBroker(tmp_path, request.param, partitions=PARTITIONS)
    yield member
    member.storage.close()


def _coordinators(member, delay_ms: int = 0, commit_timeout_s: float = 5.0):
    """The classic and the KIP-848 coordinator of one broker, and their loading."""
    coord, consumer_groups, _share_groups, loading = _all_coordinators(member, delay_ms, commit_timeout_s)
    return coord, consumer_groups, loading


def _all_coordinators(member, delay_ms: int = 0, commit_timeout_s: float = 5.0, store: OffsetsStore | None = None,
                      clock: Clock | None = None, **share_options):
    """The classic, KIP-848 and share group coordinators of one broker, and their loading, on
    `clock` (the system's if None). The share groups' persister is left out: nothing here
    reaches a share-partition's state."""
    clock = clock or SystemClock()
    store = store or offsets_store(member, PARTITIONS, clock, commit_timeout_s)
    timers = GroupTimers(store.partition_index, clock)
    coord = GroupCoordinator(store, timers, delay_ms, (1_000, 60_000))
    consumer_groups = ConsumerGroupCoordinator(coord, store, lambda: member.topics.topics,
                                               config_with().consumer_groups)
    share = config_with(**share_options).share_groups
    share_groups = ShareGroupCoordinator(SharePartitions(None, share, lambda _group: share_config_for(share, {})), store,
                                         lambda: member.topics.topics, lambda _g: None, coord.coordinator_error,
                                         timers)
    streams_groups = StreamsGroupCoordinator(coord, store, lambda: member.topics.topics, lambda _g: None,
                                             config_with().streams_groups)
    return coord, consumer_groups, share_groups, GroupLoading(coord, consumer_groups, share_groups, store,
                                                             cluster=True, streams_groups=streams_groups,
                                                             timers=timers, topics=member.topics)


def _lead_every_offsets_partition(member, loading) -> None:
    """This broker becomes the leader of each `__consumer_offsets` partition (epoch 1), and its
    coordinators load them."""
    for index in range(PARTITIONS):
        _lead(member.topics.partition(offsets_log.TOPIC, index), epoch=1)
    loading.sync()


def _coordinator(member, delay_ms: int = 0, commit_timeout_s: float = 5.0):
    """The classic coordinator of one broker, its committed offsets (no transaction verifier:
    nothing here enrols in a transaction), and their loading."""
    store = offsets_store(member, PARTITIONS, SystemClock(), commit_timeout_s)
    coord, _, _, loading = _all_coordinators(member, delay_ms, store=store)
    offsets = GroupOffsets(coord, store, member.topics, None, loading.submit, loading.submit_transactional)
    return coord, offsets, loading


def test_groups_follow_the_leadership_of_their_offsets_partition(cluster_member):
    a, b = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member, delay_ms=60_000)  # joins stay parked
        assert await _commit(offsets, a, 1) == [ErrorCode.not_coordinator]  # nothing led yet
        _lead_every_offsets_partition(cluster_member, loading)
        assert await _commit(offsets, a, 10) == [ErrorCode.none]
        assert await _commit(offsets, b, 20) == [ErrorCode.none]
        parked = asyncio.ensure_future(coord.join(_join(a)))
        await asyncio.sleep(0)
        assert not parked.done()

        _follow(cluster_member.partition(a), epoch=2)  # another broker leads a's partition now
        loading.sync()
        assert (await asyncio.wait_for(parked, 1)).error is ErrorCode.not_coordinator
        assert a not in coord.groups and coord.coordinator_error(a) is ErrorCode.not_coordinator
        assert await _commit(offsets, a, 11) == [ErrorCode.not_coordinator]
        assert coord.heartbeat(a, 1, "m", None) is ErrorCode.not_coordinator
        top, codes = coord.leave(a, [("m", None)])
        assert top is ErrorCode.not_coordinator and codes == []
        code, assignment = await coord.sync(a, 1, "m", None, None, None, {})
        assert (code, assignment) == (ErrorCode.not_coordinator, b"")
        assert await offsets.delete_groups([a]) == [ErrorCode.not_coordinator]
        assert coord.coordinator_error(b) is None and _committed(offsets, b) == 20

        _lead(cluster_member.partition(a), epoch=3)  # and back: replayed from the log
        loading.sync()
        assert coord.coordinator_error(a) is None and _committed(offsets, a) == 10
        assert _committed(offsets, b) == 20

        await cluster_member.topics.delete(offsets_log.TOPIC)  # the topic is gone: nothing is ours
        loading.sync()
        assert coord.groups == {} and coord.local_partitions == set()

    asyncio.run(scenario())


def test_a_commit_counts_once_every_in_sync_replica_has_it(cluster_member):
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member)
        partition = cluster_member.partition(a)
        _lead(partition, epoch=1, isr=(ME, OTHER))
        loading.sync()
        commit = asyncio.ensure_future(_commit(offsets, a, 7))
        await _until(lambda: partition.log_end_offset > partition.high_watermark, "the commit appended")
        assert not commit.done() and _committed(offsets, a) is None  # the follower has not fetched it
        partition.follower_fetched(OTHER, partition.log_end_offset)
        assert await commit == [ErrorCode.none] and _committed(offsets, a) == 7

    asyncio.run(scenario())


def test_a_commit_the_followers_never_fetch_times_out(cluster_member):
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member, commit_timeout_s=0.2)
        partition = cluster_member.partition(a)
        _lead(partition, epoch=1, isr=(ME, OTHER))
        loading.sync()
        # Kafka's new coordinator answers a write that timed out COORDINATOR_NOT_AVAILABLE
        # (retriable), and keeps the record, which its log holds: it counts once the follower
        # has it, and OffsetFetch sees it then, not before.
        assert await _commit(offsets, a, 7) == [ErrorCode.coordinator_not_available]
        assert partition.high_watermark < partition.log_end_offset
        assert _committed(offsets, a) is None
        partition.follower_fetched(OTHER, partition.log_end_offset)
        assert _committed(offsets, a) == 7

    asyncio.run(scenario())


def test_a_commit_waiting_when_leadership_moves_gets_not_coordinator(cluster_member):
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member)
        partition = cluster_member.partition(a)
        _lead(partition, epoch=1, isr=(ME, OTHER))
        loading.sync()
        commit = asyncio.ensure_future(_commit(offsets, a, 7))
        await _until(lambda: partition.log_end_offset > partition.high_watermark, "the commit appended")
        _follow(partition, epoch=2)
        loading.sync()
        assert await commit == [ErrorCode.not_coordinator]

    asyncio.run(scenario())


def test_too_few_in_sync_replicas_is_coordinator_not_available(tmp_path):
    member = GroupBroker(tmp_path, "segment", {"min.insync.replicas": "2"}, PARTITIONS)
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(member)
        _lead(member.partition(a), epoch=1, isr=(ME,))
        loading.sync()
        assert await _commit(offsets, a, 7) == [ErrorCode.coordinator_not_available]

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()


def test_a_stable_group_moves_with_its_members_and_generation(cluster_member):
    """What the new coordinator loads lets the members carry on without rejoining: their
    heartbeats in the same generation are answered, as after Kafka's coordinator failover."""
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member)
        partition = cluster_member.partition(a)
        _lead(partition, epoch=1)
        loading.sync()
        joined = await coord.join(_join(a))
        assert joined.error is ErrorCode.none
        code, assignment = await coord.sync(a, joined.generation, joined.member_id, None, None, None,
                                            {joined.member_id: b"assignment"})
        assert (code, assignment) == (ErrorCode.none, b"assignment")
        _follow(partition, epoch=2)
        loading.sync()
        _lead(partition, epoch=3)
        loading.sync()
        assert coord.heartbeat(a, joined.generation, joined.member_id, None) is ErrorCode.none
        assert coord.groups[a].members[joined.member_id].assignment == b"assignment"

    asyncio.run(scenario())


async def _two_members_joined(coord, group_id: str):
    """Two members in one generation (the initial rebalance delay gathers both)."""
    first, second = await asyncio.gather(coord.join(_join(group_id)), coord.join(_join(group_id)))
    assert first.error == second.error == ErrorCode.none and first.generation == second.generation
    return (first, second) if first.member_id == first.leader else (second, first)


@pytest.mark.parametrize("follower_fetches, answer, state", [
    (True, ErrorCode.none, "Stable"),
    # the write timed out: Kafka 4's classic group answers COORDINATOR_NOT_AVAILABLE and rebalances
    (False, ErrorCode.coordinator_not_available, "PreparingRebalance"),
])
def test_an_assignment_is_given_out_once_every_in_sync_replica_has_it(cluster_member, follower_fetches,
                                                                      answer, state):
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member, delay_ms=100, commit_timeout_s=0.3)
        partition = cluster_member.partition(a)
        _lead(partition, epoch=1, isr=(ME, OTHER))
        loading.sync()
        leader, follower = await _two_members_joined(coord, a)
        assignments = {leader.member_id: b"for-leader", follower.member_id: b"for-follower"}
        leader_sync = asyncio.ensure_future(coord.sync(a, leader.generation, leader.member_id, None, None, None,
                                                       assignments))
        await _until(lambda: partition.log_end_offset > partition.high_watermark, "the assignment appended")
        follower_sync = asyncio.ensure_future(coord.sync(a, follower.generation, follower.member_id, None,
                                                         None, None, {}))
        await _until(lambda: coord.groups[a].members[follower.member_id].sync_waiter is not None,
                     "the follower's SyncGroup waiting")
        assert not leader_sync.done() and not follower_sync.done()  # the assignment is being stored
        assert coord.groups[a].state.value == "CompletingRebalance"
        if follower_fetches:
            partition.follower_fetched(OTHER, partition.log_end_offset)
        got = await asyncio.gather(leader_sync, follower_sync)
        expected = [b"for-leader", b"for-follower"] if answer is ErrorCode.none else [b"", b""]
        assert [tuple(g) for g in got] == [(answer, e) for e in expected]
        assert coord.groups[a].state.value == state

    asyncio.run(scenario())


def test_consumer_groups_follow_the_leadership_and_a_new_coordinator_replays_them(cluster_member):
    """A KIP-848 group moves with its offsets partition: unloaded (NOT_COORDINATOR) when another
    broker leads it, replayed from the log by whoever leads it next, its member carrying on at
    its epoch without being fenced."""
    a, _ = _groups_in_two_partitions()
    topic_id = cluster_member.topics.get("t").topic_id

    def beat(epoch: int, owned) -> HeartbeatRequest:
        return HeartbeatRequest(a, "member-1", epoch, rebalance_timeout_ms=30_000 if epoch == 0 else -1,
                                subscribed_topic_names=("t",) if epoch == 0 else None, owned=owned)

    async def scenario():
        _, groups, loading = _coordinators(cluster_member)
        _lead_every_offsets_partition(cluster_member, loading)
        joined = await groups.heartbeat(beat(0, {}))
        assert (joined.error, joined.member_epoch, joined.assignment) == (ErrorCode.none, 1, {topic_id: frozenset({0})})

        _follow(cluster_member.partition(a), epoch=2)
        loading.sync()
        assert a not in groups.groups
        assert (await groups.heartbeat(beat(1, joined.assignment))).error is ErrorCode.not_coordinator

        _, successor, successor_loading = _coordinators(cluster_member)  # the next leader, from the log
        _lead(cluster_member.partition(a), epoch=3)
        successor_loading.sync()
        group = successor.groups[a]
        assert (group.epoch, group.assignment_epoch, list(group.members)) == (1, 1, ["member-1"])
        again = await successor.heartbeat(beat(1, joined.assignment))
        assert (again.error, again.member_epoch) == (ErrorCode.none, 1)
        assert group.owner_epoch(topic_id, 0) == 1

    asyncio.run(scenario())


def test_a_new_coordinator_applies_the_transaction_markers_in_its_log(cluster_member):
    """A transaction's offsets and its COMMIT marker in the log, then a new leader's replay (the
    marker came to it as to any follower, not through the marker append's live hook): the
    partition loads, the committed offset is the transaction's, and nothing stays pending."""
    a, _ = _groups_in_two_partitions()

    async def scenario():
        coord, offsets, loading = _coordinator(cluster_member)
        partition = cluster_member.partition(a)
        _lead(partition, epoch=1)
        loading.sync()
        wanted = [OffsetToCommit("t", 0, 42, -1, None)]
        assert await offsets.txn_commit(a, 7, 0, -1, "", None, wanted, None) == [ErrorCode.none]
        partition.append_txn_marker(7, 0, 0, commit=True)
        _follow(partition, epoch=2)
        loading.sync()

        successor, successor_offsets, successor_loading = _coordinator(cluster_member)
        _lead(partition, epoch=3)
        successor_loading.sync()
        assert successor.coordinator_error(a) is None
        [(_, [(_, value, code)])] = successor_offsets.fetch(a, [("t", [0])], require_stable=True)
        assert (value.offset, code) == (42, ErrorCode.none)

    asyncio.run(scenario())


def test_share_groups_are_written_and_an_idle_one_is_replayed_by_the_next_coordinator(cluster_member):
    """A share group's records (its epoch, the share-partitions it was assigned) reach the log
    before its member is answered; after the member leaves, the group moves with its offsets
    partition: unloaded here, replayed Empty by the next leader with what may have state; a
    deleted group (its tombstones) is replayed as gone."""
    a, _ = _groups_in_two_partitions()
    topic_id = cluster_member.topics.get("t").topic_id

    async def scenario():
        _, _, shares, loading = _all_coordinators(cluster_member)
        _lead_every_offsets_partition(cluster_member, loading)
        joined = await shares.heartbeat(a, "member-1", 0, ("t",), None, "client", "/127.0.0.1")
        assert (joined.error, joined.assignment) == (ErrorCode.none, {topic_id: frozenset({0})})
        left = await shares.heartbeat(a, "member-1", -1, None, None, "client", "/127.0.0.1")
        assert left.error is ErrorCode.none
        epoch = shares.groups[a].epoch

        _follow(cluster_member.partition(a), epoch=2)
        loading.sync()
        assert a not in shares.groups

        _, _, successor, successor_loading = _all_coordinators(cluster_member)  # the next leader, from the log
        _lead(cluster_member.partition(a), epoch=3)
        successor_loading.sync()
        group = successor.groups[a]
        assert (group.state, group.epoch, group.members) == ("Empty", epoch, {})
        assert group.state_partitions == {topic_id: ("t", frozenset({0}))}
        rejoined = await successor.heartbeat(a, "member-1", 0, ("t",), None, "client", "/127.0.0.1")
        assert rejoined.error is ErrorCode.none and rejoined.member_epoch > epoch  # the epoch goes on from the log's

        assert (await successor.heartbeat(a, "member-1", -1, None, None, "client", "/127.0.0.1")).error is ErrorCode.none
        assert await successor.change(a, lambda _g: None, deleting=True) == (ErrorCode.none, None)  # its tombstones
        assert a not in successor.groups  # their replay deleted it
        _, _, third, third_loading = _all_coordinators(cluster_member)
        _follow(cluster_member.partition(a), epoch=4)
        _lead(cluster_member.partition(a), epoch=5)
        third_loading.sync()
        assert a not in third.groups
        successor.close()

    asyncio.run(scenario())


def test_share_members_move_with_their_coordinator_and_one_that_does_not_come_back_is_fenced(cluster_member):
    """Two members join; the group's offsets partition moves to the next leader, which replays the
    members with their epochs and assignments: one heartbeats it at its old epoch and goes on, no
    rebalance; the other never comes back and is fenced at its session timeout, its records
    tombstoned, so a third coordinator replays the group with the first member only."""
    a, _ = _groups_in_two_partitions()
    topic_id = cluster_member.topics.get("t").topic_id
    host = "/127.0.0.1"

    async def scenario():
        _, _, shares, loading = _all_coordinators(cluster_member)
        _lead_every_offsets_partition(cluster_member, loading)
        joined = await shares.heartbeat(a, "stays", 0, ("t",), None, "client", host)
        gone = await shares.heartbeat(a, "goes", 0, ("t",), None, "client", host)
        stays = await shares.heartbeat(a, "stays", joined.member_epoch, None, None, "client", host)
        assert stays.error is ErrorCode.none and stays.member_epoch == gone.member_epoch
        assignment = shares.groups[a].members["stays"].assignment
        _follow(cluster_member.partition(a), epoch=2)
        loading.sync()
        shares.close()

        clock = ManualClock()  # the successor's: its sessions end when the test moves it on
        _, _, successor, successor_loading = _all_coordinators(cluster_member, clock=clock,
                                                              group_share_session_timeout_ms=2000,
                                                              group_share_heartbeat_interval_ms=500)
        _lead(cluster_member.partition(a), epoch=3)
        successor_loading.sync()
        group = successor.groups[a]
        assert set(group.members) == {"stays", "goes"} and group.state == "Stable"
        epoch = group.epoch
        again = await successor.heartbeat(a, "stays", stays.member_epoch, None, None, "client", host)
        assert (again.error, again.member_epoch, again.assignment) == (ErrorCode.none, stays.member_epoch, assignment)
        assert assignment == {topic_id: frozenset({0})} and group.epoch == epoch

        for _ in range(4):  # "stays" heartbeats every 500 ms for 2 s; "goes" never comes back
            assert "goes" in group.members  # not before its session timeout
            clock.advance(500)
            assert (await successor.heartbeat(a, "stays", stays.member_epoch, None, None, "client",
                                              host)).error is ErrorCode.none
        await _until(lambda: "goes" not in group.members and a not in successor._writing,
                     "goes fenced at its session timeout and the fencing written")
        assert set(group.members) == {"stays"}
        _follow(cluster_member.partition(a), epoch=4)
        successor_loading.sync()
        successor.close()

        _, _, third, third_loading = _all_coordinators(cluster_member)
        _lead(cluster_member.partition(a), epoch=5)
        third_loading.sync()
        assert set(third.groups[a].members) == {"stays"} and third.groups[a].epoch > epoch
        third.close()

    asyncio.run(scenario())


def test_a_heartbeat_that_changes_nothing_does_not_wait_for_another_write(cluster_member):
    """A member's heartbeat that changes nothing is answered while another share group's write
    of its partition waits for a follower (acks=-1); one that changes the group (a join) waits
    for its own write, behind that one in the partition's queue."""
    a, _ = _groups_in_two_partitions()
    index = offsets_log.partition_for(a, PARTITIONS)
    beside = next(f"beside-{i}" for i in range(100) if offsets_log.partition_for(f"beside-{i}", PARTITIONS) == index)
    host = "/127.0.0.1"

    async def replicated(partition, answer: asyncio.Future):
        while not answer.done():  # the follower fetches whatever the leader appends meanwhile
            partition.follower_fetched(OTHER, partition.log_end_offset)
            await asyncio.sleep(0.001)
        return answer.result()

    async def scenario():
        _, _, shares, loading = _all_coordinators(cluster_member)
        _lead_every_offsets_partition(cluster_member, loading)
        joined = await shares.heartbeat(a, "m1", 0, ("t",), None, "client", host)
        settled = await shares.heartbeat(a, "m1", joined.member_epoch, None, None, "client", host)
        assert settled.error is ErrorCode.none
        partition = cluster_member.topics.partition(offsets_log.TOPIC, index)
        _lead(partition, epoch=2, isr=(ME, OTHER))  # a write counts once OTHER has it
        end = partition.log_end_offset
        held = asyncio.ensure_future(shares.heartbeat(beside, "b1", 0, ("t",), None, "client", host))

        async def appended() -> None:  # its records are in the log, waiting for OTHER
            while partition.log_end_offset == end:
                await asyncio.sleep(0.001)
        await asyncio.wait_for(appended(), 10)
        again = await asyncio.wait_for(shares.heartbeat(a, "m1", settled.member_epoch, None, None, "client", host), 10)
        assert (again.error, again.member_epoch) == (ErrorCode.none, settled.member_epoch)
        join = asyncio.ensure_future(shares.heartbeat(a, "m2", 0, ("t",), None, "client", host))
        await asyncio.sleep(0.05)
        assert not join.done() and not held.done()  # their records are not replicated yet: no answer
        assert (await asyncio.wait_for(replicated(partition, held), 10)).error is ErrorCode.none
        assert (await asyncio.wait_for(replicated(partition, join), 10)).error is ErrorCode.none
        shares.close()

    asyncio.run(scenario())
