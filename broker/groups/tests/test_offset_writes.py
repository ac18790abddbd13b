"""Committed offsets are operations of their group's `__consumer_offsets` partition in the
coordinator runtime (offset_ops.py): handled in order, their records replayed into the groups
and written through the write path, answered once every in-sync replica has them; a write that
fails answers the coordinator's error and puts back, as the log holds them, the groups and
offsets its records changed.

Real parts below the coordinators (group_broker.py): real Partitions made leader as the replica
manager does, a real engine, the real write path; a follower's progress as its fetches report it.
"""

from __future__ import annotations

import asyncio

import pytest

from wire.error_codes import ErrorCode

from broker.coordinator.clock import ManualClock
from broker.groups import offsets_log
from broker.groups.offsets import OffsetToCommit
from broker.groups.tests.group_broker import (OTHER, PARTITIONS, GroupBroker, coordinators, lead, offsets_store,
                                              settled)
from broker.storage.modes import MODES

GROUP = "committing"


@pytest.fixture(params=MODES)
def broker(tmp_path, request):
    b = GroupBroker(tmp_path, request.param, offsets_configs={"min.insync.replicas": "2"})
    yield b
    b.storage.close()


async def _commit(c, offset: int) -> list[ErrorCode]:
    """A simple commit (generation -1, no member id), as an admin or an assign() consumer sends."""
    return await c.offsets.commit(GROUP, -1, "", None, [OffsetToCommit("t", 0, offset, -1, "m")])


def _committed(c) -> int | None:
    [(_, [(_, value, _)])] = c.offsets.fetch(GROUP, [("t", [0])])
    return None if value is None else value.offset


def _log(broker) -> list[tuple[bytes, bytes | None]]:
    """The group's partition's records, as the next leader would replay them."""
    store = offsets_store(broker, PARTITIONS, ManualClock())
    return [(r.key, r.value) for r in store.replay_partition(broker.partition(GROUP))]


def test_an_offset_commit_is_written_then_replayed_from_the_log(broker):
    partition = broker.partition(GROUP)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        commit = asyncio.ensure_future(_commit(c, 42))
        await settled(lambda: partition.log_end_offset > partition.high_watermark, "the commit appended")
        value = c.classic.groups[GROUP].offsets[("t", 0)]  # replayed into the group already
        assert (value.offset, value.record_offset) == (42, partition.log_end_offset - 1)
        assert _committed(c) is None and not commit.done()  # not counted before the follower has it
        partition.follower_fetched(OTHER, partition.log_end_offset)
        assert await commit == [ErrorCode.none] and _committed(c) == 42
        assert _log(broker) == [(offsets_log.offset_key(GROUP, "t", 0), offsets_log.offset_value(value))]

        successor = coordinators(broker, ManualClock())
        successor.loading.sync()
        assert _committed(successor) == 42

    asyncio.run(scenario())


def test_an_offset_delete_sent_while_a_commit_waits_for_the_followers_runs_after_it(broker):
    """One partition's operations run in order: the delete sees the commit before it, and its
    tombstone follows the commit's record in the log."""
    partition = broker.partition(GROUP)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        commit = asyncio.ensure_future(_commit(c, 42))
        await settled(lambda: partition.log_end_offset > partition.high_watermark, "the commit appended")
        delete = asyncio.ensure_future(c.offsets.delete_offsets(GROUP, [("t", [0])]))
        await settled(lambda: True, "a turn of the loop")
        assert not delete.done()  # queued behind the commit's write
        assert await _replicated(partition, delete) == (ErrorCode.none, {("t", 0): ErrorCode.none})
        assert await commit == [ErrorCode.none]
        assert _committed(c) is None
        key = offsets_log.offset_key(GROUP, "t", 0)
        assert [(k, v is None) for k, v in _log(broker)] == [(key, False), (key, True)]

    asyncio.run(scenario())


async def _replicated(partition, answer: asyncio.Future):
    """`answer`, the follower fetching whatever the leader appends meanwhile."""
    while not answer.done():
        partition.follower_fetched(OTHER, partition.log_end_offset)
        await asyncio.sleep(0)
    return await answer


def test_a_write_refused_answers_coordinator_not_available_and_puts_back_what_it_changed(broker):
    partition = broker.partition(GROUP)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        assert await _replicated(partition, asyncio.ensure_future(_commit(c, 5))) == [ErrorCode.none]
        group = c.classic.groups[GROUP]
        lead(partition, epoch=2, isr=(1,))  # below min.insync.replicas=2: the log refuses writes
        written = partition.log_end_offset
        assert await _commit(c, 9) == [ErrorCode.coordinator_not_available]
        assert partition.log_end_offset == written  # nothing appended
        assert c.classic.groups[GROUP] is group  # the same group, not replayed from the log again
        assert _committed(c) == 5  # what the log says, not the refused commit's replay

    asyncio.run(scenario())


def test_a_refused_write_brings_back_the_group_it_deleted_and_drops_the_one_it_made(broker):
    partition = broker.partition(GROUP)
    lead(partition, epoch=1, isr=(1, OTHER))
    other = next(g for g in (f"other-{i}" for i in range(100))  # in the same partition
                 if offsets_log.partition_for(g, PARTITIONS) == partition.index)

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        assert await _replicated(partition, asyncio.ensure_future(_commit(c, 5))) == [ErrorCode.none]
        group = c.classic.groups[GROUP]
        state = group.state
        lead(partition, epoch=2, isr=(1,))  # below min.insync.replicas=2: the log refuses writes
        deleted, made = await asyncio.gather(  # one batch: both records refused
            c.offsets.delete_groups([GROUP]),
            c.offsets.commit(other, -1, "", None, [OffsetToCommit("t", 0, 3, -1, "m")]))
        assert deleted == [ErrorCode.coordinator_not_available] and made == [ErrorCode.coordinator_not_available]
        assert c.classic.groups[GROUP] is group and group.state is state and _committed(c) == 5
        assert other not in c.classic.groups

    asyncio.run(scenario())


def test_a_deleted_group_is_tombstoned_through_the_runtime(broker):
    partition = broker.partition(GROUP)
    lead(partition, epoch=1, isr=(1, OTHER))

    async def scenario():
        c = coordinators(broker, ManualClock())
        c.loading.sync()
        assert await _replicated(partition, asyncio.ensure_future(_commit(c, 3))) == [ErrorCode.none]
        unknown = next(g for g in (f"unknown-{i}" for i in range(100))  # in the same partition
                       if offsets_log.partition_for(g, PARTITIONS) == partition.index)
        deleted = asyncio.ensure_future(c.offsets.delete_groups([GROUP, unknown]))
        assert await _replicated(partition, deleted) == [ErrorCode.none, ErrorCode.group_id_not_found]
        assert GROUP not in c.classic.groups
        assert [key for key, value in _log(broker) if value is None] == [
            offsets_log.offset_key(GROUP, "t", 0), offsets_log.group_key(GROUP)]
        successor = coordinators(broker, ManualClock())
        successor.loading.sync()
        assert GROUP not in successor.classic.groups

    asyncio.run(scenario())


def test_a_transactions_offsets_whose_write_times_out_stay_pending_as_the_log_has_them(broker):
    """The producer's batch is in the leader's log, not replicated in time: its offsets are the
    log's, pending until the producer's marker, which commits them."""
    partition = broker.partition(GROUP)
    lead(partition, epoch=1, isr=(1, OTHER))  # the follower never fetches

    async def scenario():
        c = coordinators(broker, ManualClock(), commit_timeout_s=0.2)
        c.loading.sync()
        codes = await c.offsets.txn_commit(GROUP, 100, 0, -1, "", None, [OffsetToCommit("t", 0, 9, -1, "m")], None)
        assert codes == [ErrorCode.coordinator_not_available]  # REQUEST_TIMED_OUT, as Kafka maps it
        group = c.classic.groups[GROUP]
        assert group.pending_txn_offsets.is_pending(("t", 0))
        c.offsets.end_transaction(partition.index, 100, partition.log_end_offset, True)
        assert group.offsets[("t", 0)].offset == 9

    asyncio.run(scenario())
