"""Consumer groups through aiokafka: AIOKafkaConsumer(group_id=...) and AIOKafkaAdminClient.

The scenarios in group_scenarios.py are synchronous, so every aiokafka object of this process
lives on one event loop run by a daemon thread (`_loop`), and the member's calls wait for
coroutines submitted to it; heartbeats and rebalances run on that loop meanwhile. aiokafka's
admin client has no DeleteGroups, so the admin test covers list, describe and offsets.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from aiokafka.structs import OffsetAndMetadata

from compat_tests.helpers import group_scenarios as gs

BROKER_ARGS = gs.GROUP_BROKER_ARGS  # the module broker: a short rebalance delay

pytestmark = pytest.mark.timeout(120)

FACTORY = f"{__name__}:make_member"
_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = asyncio.new_event_loop()
            threading.Thread(target=_LOOP.run_forever, name="aiokafka-loop", daemon=True).start()
        return _LOOP


def run(coro, timeout: float = 60.0):
    return asyncio.run_coroutine_threadsafe(coro, _loop()).result(timeout)


class AiokafkaMember(gs.GroupMember):
    def __init__(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name, self.topic = name, topic

        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                enable_auto_commit=False, auto_offset_reset="earliest",
                session_timeout_ms=gs.SESSION_TIMEOUT_MS, heartbeat_interval_ms=gs.HEARTBEAT_MS,
                request_timeout_ms=15000)
            await consumer.start()
            return consumer

        self.consumer = run(start())

    def poll(self, timeout_s):
        batches = run(self.consumer.getmany(timeout_ms=int(timeout_s * 1000)))
        return [(m.partition, m.offset, m.value) for msgs in batches.values() for m in msgs]

    def assignment(self):
        async def get():
            return {tp.partition for tp in self.consumer.assignment() if tp.topic == self.topic}
        return run(get())

    def commit(self):
        try:
            run(self.consumer.commit())
            return True
        except KafkaError:  # CommitFailedError, RebalanceInProgressError, ...
            return False

    def commit_offsets(self, offsets):
        run(self.consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "")
                                  for p, o in offsets.items()}))

    def committed(self, partitions):
        async def get():
            return {p: await self.consumer.committed(TopicPartition(self.topic, p)) for p in partitions}
        return run(get())

    def close(self):
        run(asyncio.wait_for(self.consumer.stop(), 20))


def make_member(bootstrap: str, topic: str, group: str, name: str) -> AiokafkaMember:
    return AiokafkaMember(bootstrap, topic, group, name)


def test_three_members_share_six_partitions_exactly_once(broker):
    gs.scenario_three_members_exactly_once(broker.bootstrap, make_member, "ak-g3")


def test_clean_leave_moves_partitions_without_redelivering_committed(broker):
    gs.scenario_clean_leave(broker.bootstrap, make_member, "ak-leave")


def test_killed_member_partitions_move_after_session_timeout(broker):
    gs.scenario_member_killed(broker.bootstrap, make_member, FACTORY, "ak-kill")


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_committed_offsets_survive_broker_restart(broker_factory, how):
    gs.scenario_resume_after_restart(broker_factory(*gs.GROUP_BROKER_ARGS), make_member, f"ak-restart-{how}", how)


def test_admin_list_describe_offsets(broker):
    topic, group, members, produced, _ = gs.stable_group_with_commits(broker.bootstrap, make_member, "ak-admin")

    async def look(admin: AIOKafkaAdminClient):
        listed = await admin.list_consumer_groups()
        [response] = await admin.describe_consumer_groups([group])
        offsets = await admin.list_consumer_group_offsets(group)
        return listed, response, offsets

    async def with_admin(fn):
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="compat-aiokafka-admin",
                                    request_timeout_ms=15000)
        await admin.start()
        try:
            return await fn(admin)
        finally:
            await admin.close()

    try:
        listed, response, offsets = run(with_admin(look))
        assert (group, "consumer") in [tuple(g[:2]) for g in listed], listed
        [described] = response.groups
        error_code, group_id, state, protocol_type, protocol, described_members = described[:6]
        assert (error_code, group_id, state, protocol_type) == (0, group, "Stable", "consumer"), described
        assert protocol in ("range", "roundrobin"), protocol
        # (member_id, [group_instance_id,] client_id, client_host, metadata, assignment)
        client_ids = sorted(m[-4] for m in described_members)
        assert client_ids == sorted(m.name for m in members), described_members
        assert all(m[-1] for m in described_members), "a Stable group describes each member's assignment"
        assert {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic} == gs.end_offsets(produced)

        gs.close_all(members)
        listed, response, offsets = run(with_admin(look))
        [described] = response.groups
        assert described[2] == "Empty" and list(described[5]) == [], described
        assert len(offsets) == gs.PARTITIONS  # offsets outlive the members
    finally:
        gs.close_all(members)
