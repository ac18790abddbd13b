"""The group coordinators' timers are their `__consumer_offsets` partition's, on the coordinator
runtime's clock (group_timers.py): a member's session ends when the clock passes it, a member or
group that goes takes its timers with it, and a partition that is no longer led here has its
timers cancelled with its groups. The clock is a ManualClock: nothing here waits for time.

Real parts below the coordinators (group_broker.py): real Partitions, a real engine, the real
write path.
"""

from __future__ import annotations

import asyncio

import pytest

from wire.error_codes import ErrorCode

from broker.coordinator.clock import ManualClock
from broker.groups.join_messages import JoinRequest
from broker.groups.consumer.heartbeat_request import HeartbeatRequest
from broker.groups.streams.heartbeat_request import StreamsHeartbeat
from broker.groups.streams.tasks import Tasks
from broker.groups.streams.topology import Subtopology, Topology
from broker.groups.tests.group_broker import GroupBroker, coordinators, follow, lead, settled
from broker.storage.modes import MODES

GROUP = "timed"
HOST = "/127.0.0.1"


@pytest.fixture(params=MODES)
def broker(tmp_path, request):
    b = GroupBroker(tmp_path, request.param)
    b.lead_all(epoch=1)
    yield b
    b.storage.close()


def _join(member_id: str = "", session_ms: int = 10_000) -> JoinRequest:
    return JoinRequest(GROUP, member_id, None, "client", HOST, session_ms, 30_000, "consumer",
                       [("range", b"m")], require_known_member=False)


def _consumer_join(member_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(GROUP, member_id, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                            owned={})


def test_a_classic_member_is_removed_when_the_clock_passes_its_session(broker):
    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await c.classic.join(_join())
        assert joined.error is ErrorCode.none
        group = c.classic.groups[GROUP]
        c.clock.advance(9_999)
        await settled(lambda: True, "a turn of the loop")
        assert joined.member_id in group.members  # not before its session ends
        c.clock.advance(1)
        await settled(lambda: joined.member_id not in group.members, "the member removed at its session timeout")
        assert c.classic.heartbeat(GROUP, joined.generation, joined.member_id, None) is ErrorCode.unknown_member_id

    asyncio.run(scenario())


def test_a_consumer_member_expires_on_the_clock_and_its_leaving_is_written(broker):
    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await c.consumer.heartbeat(_consumer_join("m1"))
        assert (joined.error, joined.member_epoch) == (ErrorCode.none, 1)
        partition = broker.partition(GROUP)
        written = partition.log_end_offset
        c.clock.advance(c.consumer.settings.session_timeout_ms)
        await settled(lambda: partition.log_end_offset > written and not c.consumer.groups[GROUP].members,
                      "the member's removal written")
        assert len(c.timers) == 0  # its session and revocation timers are gone with it

        successor = coordinators(broker, ManualClock())  # the next coordinator replays the removal
        successor.loading.sync()
        assert successor.consumer.groups[GROUP].members == {}

    asyncio.run(scenario())


def test_a_streams_member_expires_on_the_clock(broker):
    topology = Topology(0, (Subtopology("0", ("t",)),))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await c.streams.heartbeat(StreamsHeartbeat(GROUP, "s1", 0, rebalance_timeout_ms=30_000,
                                                            topology=topology, owned=Tasks(), process_id="p"))
        assert joined.error is ErrorCode.none
        group = c.streams.groups[GROUP]
        c.clock.advance(c.streams.settings.session_timeout_ms - 1)
        await settled(lambda: True, "a turn of the loop")
        assert "s1" in group.members
        c.clock.advance(1)
        await settled(lambda: "s1" not in group.members, "the streams member removed at its session timeout")

    asyncio.run(scenario())


def test_a_member_that_leaves_takes_its_timers_with_it(broker):
    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await c.consumer.heartbeat(_consumer_join("m1"))
        assert len(c.timers) == 1  # its session
        left = await c.consumer.heartbeat(HeartbeatRequest(GROUP, "m1", -1))
        assert left.error is ErrorCode.none and joined.error is ErrorCode.none
        assert len(c.timers) == 0

        classic = await c.classic.join(_join())
        assert len(c.timers) > 0  # its session, the sync phase
        code, codes = c.classic.leave(GROUP, [(classic.member_id, None)])
        assert (code, codes) == (ErrorCode.none, [ErrorCode.none])
        assert len(c.timers) == 0  # its session, and the sync phase the group left

    asyncio.run(scenario())


def test_a_partition_no_longer_led_cancels_its_groups_timers_and_answers_not_coordinator(broker):
    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        joined = await c.consumer.heartbeat(_consumer_join("m1"))
        shared = await c.share.heartbeat(GROUP, "sh1", 0, ("t",), None, "client", HOST)
        assert joined.error is ErrorCode.none and shared.error is ErrorCode.none
        assert len(c.timers) == 2 and c.clock.pending == 2
        follow(broker.partition(GROUP), epoch=2)
        c.loading.sync()
        assert len(c.timers) == 0 and c.clock.pending == 0
        assert GROUP not in c.consumer.groups and GROUP not in c.share.groups
        again = await c.consumer.heartbeat(HeartbeatRequest(GROUP, "m1", 1))
        assert again.error is ErrorCode.not_coordinator
        c.clock.advance(c.consumer.settings.session_timeout_ms)  # nothing left to fire
        lead(broker.partition(GROUP), epoch=3)
        c.loading.sync()
        assert set(c.consumer.groups[GROUP].members) == {"m1"}  # replayed, with a fresh session
        assert len(c.timers) == 2
        c.share.close()

    asyncio.run(scenario())
