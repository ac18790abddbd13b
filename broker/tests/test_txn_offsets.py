"""Offsets written in a transaction (TxnOffsetCommit): pending until their producer's marker, then
committed (unless a later plain commit of the partition is newer) or dropped; the same outcome
live and when `__consumer_offsets` is replayed.

A Hypothesis model walks random interleavings of plain commits, several producers'
transactional commits and their COMMIT / ABORT markers over two partitions: the offsets
applied as they happen (live, also with a plain commit acknowledged after a marker that came
later in the log) and the offsets a replay of that log loads must both equal a model that reads
the log's answer directly: a partition's committed value is its latest record, in log order,
among plain ones and those of transactions committed after them. Then the real path on a
broker of each storage layout: GroupOffsets.txn_commit writing a transactional batch, the marker
through broker/txn/marker_append.py, OffsetFetch's view, fencing, and a reopened broker's replay.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wire.error_codes import ErrorCode

from broker.broker import Broker
from broker.settings.config_from_settings import config_with
from broker.groups import offsets_log, offsets_replay
from broker.groups.offsets import OffsetToCommit
from broker.coordinator.clock import ManualClock
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group_timers import GroupTimers
from broker.groups.committed_offset import CommittedOffset
from broker.groups.offsets_store import StoredMarker, StoredRecord
from broker.groups.pending_offsets import PendingTxnOffsets, keep_later
from broker.storage.modes import MODES
from broker.txn.marker_append import Marker

GROUP = "g"
PARTITIONS = [("t", 0), ("t", 1)]
PRODUCERS = [100, 200, 300]

# ("plain", partition, value) | ("txn", producer, partition, value) | ("end", producer, commit)
_steps = st.lists(st.one_of(
    st.tuples(st.just("plain"), st.sampled_from(PARTITIONS), st.integers(0, 1000)),
    st.tuples(st.just("txn"), st.sampled_from(PRODUCERS), st.sampled_from(PARTITIONS), st.integers(0, 1000)),
    st.tuples(st.just("end"), st.sampled_from(PRODUCERS), st.booleans()),
), max_size=40)


def _model(log: list[tuple]) -> tuple[dict, set]:
    """(partition -> committed value, partitions with an open transaction's offset), read off the
    log: the latest plain record or committed transactional record of each partition wins."""
    latest: dict = {}  # partition -> (record offset, value)
    open_writes: dict[int, list[tuple]] = {}
    for offset, step in enumerate(log):
        if step[0] == "plain":
            latest[step[1]] = (offset, step[2])
        elif step[0] == "txn":
            open_writes.setdefault(step[1], []).append((offset, step[2], step[3]))
        elif step[2]:  # a COMMIT marker
            for record_offset, partition, value in open_writes.pop(step[1], []):
                if partition not in latest or latest[partition][0] < record_offset:
                    latest[partition] = (record_offset, value)
        else:
            open_writes.pop(step[1], None)
    unstable = {partition for writes in open_writes.values() for _, partition, _ in writes}
    return {p: v for p, (_, v) in latest.items()}, unstable


def _value(offset: int, value: int) -> CommittedOffset:
    return CommittedOffset(value, -1, "", 0, record_offset=offset)


def _live(log: list[tuple], late_plain_acks: random.Random) -> tuple[dict, PendingTxnOffsets]:
    """Apply the log as the coordinator does while it is written; a plain commit is applied when
    its write is acknowledged, which may be after markers written behind it."""
    committed: dict = {}
    pending = PendingTxnOffsets()
    acks: list[tuple] = []
    for offset, step in enumerate(log):
        if step[0] == "plain":
            acks.append((step[1], _value(offset, step[2])))
        elif step[0] == "txn":
            pending.add(step[1], step[2], _value(offset, step[3]))  # pending as soon as appended
        else:
            pending.end(step[1], offset, step[2], committed)
        while acks and late_plain_acks.random() < 0.5:
            keep_later(committed, *acks.pop(0))
    for partition, value in acks:
        keep_later(committed, partition, value)
    return {p: v.offset for p, v in committed.items()}, pending


def _replayed(log: list[tuple]):
    """What offsets_replay.load rebuilds from the same log."""
    coord = GroupCoordinator(None, GroupTimers(lambda _group: None, ManualClock()), 0)
    records = []
    for offset, step in enumerate(log):
        if step[0] == "end":
            records.append(StoredMarker(0, offset, step[1], step[2]))
            continue
        partition, value, producer = (step[1], step[2], -1) if step[0] == "plain" else (step[2], step[3], step[1])
        key = offsets_log.offset_key(GROUP, *partition)
        records.append(StoredRecord(0, offset, key, offsets_log.offset_value(_value(offset, value)), producer))
    offsets_replay.load(coord, records)
    return coord.groups.get(GROUP)


@given(_steps, st.randoms(use_true_random=False))
def test_live_and_replayed_offsets_agree_with_the_log(log, rnd):
    expected, unstable = _model(log)
    live, pending = _live(log, rnd)
    assert live == expected
    assert pending.partitions() == unstable
    group = _replayed(log)
    if group is None:
        assert not expected and not unstable
        return
    assert {p: v.offset for p, v in group.offsets.items()} == expected
    assert group.pending_txn_offsets.partitions() == unstable


def test_a_marker_leaves_the_producers_later_offsets_pending():
    """Markers count once replicated, and by then the producer may have written its next
    transaction's offsets: those stay pending for the next marker."""
    committed: dict = {}
    pending = PendingTxnOffsets()
    pending.add(100, ("t", 0), _value(5, 50))
    pending.add(100, ("t", 1), _value(9, 90))  # the next transaction, behind the marker at 7
    pending.end(100, 7, True, committed)
    assert {p: v.offset for p, v in committed.items()} == {("t", 0): 50}
    assert pending.partitions() == {("t", 1)}


def test_an_offset_held_before_its_write_stays_pending_at_a_marker():
    """TxnOffsetCommit's offsets are pending from their operation's turn, before their batch is in
    the log (record_offset -1): a marker then is before their record."""
    committed: dict = {}
    pending = PendingTxnOffsets()
    pending.add(100, ("t", 0), _value(5, 50))
    held = _value(-1, 70)
    pending.add(100, ("t", 1), held)
    pending.end(100, 7, True, committed)
    assert {p: v.offset for p, v in committed.items()} == {("t", 0): 50}
    assert pending.partitions() == {("t", 1)}  # not written yet: its record follows the marker


def test_a_tombstone_drops_an_open_transactions_offset():
    group = _replayed([("txn", 100, ("t", 0), 5)])
    assert group.pending_txn_offsets.is_pending(("t", 0))
    coord = GroupCoordinator(None, GroupTimers(lambda _group: None, ManualClock()), 0)
    key = offsets_log.offset_key(GROUP, "t", 0)
    offsets_replay.load(coord, [StoredRecord(0, 0, key, offsets_log.offset_value(_value(0, 5)), 100),
                         StoredRecord(0, 1, key, None), StoredMarker(0, 2, 100, True)])
    assert coord.groups[GROUP].pending_txn_offsets.partitions() == set() and coord.groups[GROUP].offsets == {}


# --- the real path, on a broker of each layout -------------------------------------------------

def _broker(data_dir, mode: str) -> Broker:
    return Broker(config_with(data_dir=str(data_dir), storage_mode=mode))


async def _txn_commit(broker: Broker, partition: int, offset: int, producer: int, epoch: int = 0) -> list[str]:
    wanted = [OffsetToCommit("t", partition, offset, -1, None)]
    return await broker.group_offsets.txn_commit(GROUP, producer, epoch, -1, "", None, wanted, None)


async def _plain_commit(broker: Broker, partition: int, offset: int) -> list[str]:
    return await broker.group_offsets.commit(GROUP, -1, "", None, [OffsetToCommit("t", partition, offset, -1, None)])


async def _marker(broker: Broker, producer: int, commit: bool, epoch: int = 0) -> ErrorCode:
    index = broker.offsets_store.partition_index(GROUP)
    (code,) = await broker.api.transactions.write_markers([Marker(offsets_log.TOPIC, index, producer, epoch, 0, commit)])
    return code


def _fetched(broker: Broker, require_stable: bool = False) -> dict:
    [(_, parts)] = broker.group_offsets.fetch(GROUP, [("t", [0, 1, 2, 3])], require_stable)
    return {p: (v.offset if v else code if code is not ErrorCode.none else None) for p, v, code in parts}


@pytest.mark.parametrize("mode", MODES)
def test_txn_offsets_through_a_broker_and_its_replay(tmp_path, mode):
    async def write() -> None:
        broker = _broker(tmp_path, mode)
        await broker.topic_admin.create_topic("t", 4, 1, {})
        assert await _plain_commit(broker, 0, 3) == [ErrorCode.none]
        assert await _txn_commit(broker, 0, 7, producer=1) == [ErrorCode.none]
        assert _fetched(broker) == {0: 3, 1: None, 2: None, 3: None}
        assert _fetched(broker, require_stable=True)[0] is ErrorCode.unstable_offset_commit
        assert await _marker(broker, 1, commit=True) is ErrorCode.none
        assert _fetched(broker, require_stable=True)[0] == 7
        # the same producer's next transaction: a batch of the same size, at sequence 0 again, lands
        end = broker.offsets_store.topic().partitions[broker.offsets_store.partition_index(GROUP)].log_end_offset
        assert await _txn_commit(broker, 0, 8, producer=1) == [ErrorCode.none]
        assert await _marker(broker, 1, commit=False) is ErrorCode.none
        partition = broker.offsets_store.topic().partitions[broker.offsets_store.partition_index(GROUP)]
        assert partition.log_end_offset == end + 2 and _fetched(broker)[0] == 7  # aborted: never seen
        # a plain commit written after a transaction's offset wins when that transaction commits
        assert await _txn_commit(broker, 1, 20, producer=2) == [ErrorCode.none]
        assert await _plain_commit(broker, 1, 21) == [ErrorCode.none]
        assert await _marker(broker, 2, commit=True) is ErrorCode.none
        assert _fetched(broker)[1] == 21
        # fenced: once the partition saw epoch 1 of producer 3, epoch 0 writes nothing
        assert await _txn_commit(broker, 2, 30, producer=3, epoch=1) == [ErrorCode.none]
        assert await _txn_commit(broker, 3, 31, producer=3, epoch=0) == [ErrorCode.invalid_producer_epoch]
        assert await _marker(broker, 3, commit=True, epoch=1) is ErrorCode.none
        assert await _txn_commit(broker, 3, 40, producer=4) == [ErrorCode.none]  # left open
        assert _fetched(broker, require_stable=True) == {0: 7, 1: 21, 2: 30, 3: ErrorCode.unstable_offset_commit}
        broker.storage.close()

    async def reopen() -> None:
        broker = _broker(tmp_path, mode)
        offsets_replay.load(broker.groups, broker.offsets_store.replay())
        assert _fetched(broker) == {0: 7, 1: 21, 2: 30, 3: None}
        assert _fetched(broker, require_stable=True)[3] is ErrorCode.unstable_offset_commit
        assert await _marker(broker, 4, commit=True) is ErrorCode.none  # the open one ends after the restart
        assert _fetched(broker, require_stable=True) == {0: 7, 1: 21, 2: 30, 3: 40}
        broker.storage.close()

    asyncio.run(write())
    asyncio.run(reopen())
