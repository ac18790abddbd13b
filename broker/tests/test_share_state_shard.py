"""broker/groups/share/state_shard.py, the share coordinator's shard on its own: fencing as
Kafka's, the records an operation asks to write, and nothing kept for a key once it is deleted.
The runtime's part (writing, then replaying) is done here by hand: replay what handle returned."""

from __future__ import annotations

import uuid

from wire.error_codes import ErrorCode

from broker.coordinator.clock import ManualClock
from broker.coordinator.runtime import ShardContext
from broker.coordinator.shard_timer import ShardTimer
from broker.coordinator.undo import UndoLog
from broker.groups.share.share_partition import RecordState, StateRange
from broker.groups.share.state_shard import (UNINITIALIZED, Delete, Initialize, Read, ShareStateShard, Summary,
                                             Write)

KEY = ("group", uuid.uuid4(), 0)


def _shard(clock: ManualClock, undo: UndoLog | None = None) -> ShareStateShard:
    return ShareStateShard(ShardContext(None, clock, ShardTimer(clock, lambda op: None), undo or UndoLog()))


def _run(shard: ShareStateShard, op):
    """What the runtime does once the write succeeded: replay the records, then answer."""
    outcome = shard.handle(op)
    for record in outcome.records:
        shard.replay(record)
    return outcome.records, outcome.answer


def test_reads_and_writes_are_fenced_as_kafkas():
    clock = ManualClock(1_000)
    shard = _shard(clock)
    _, read = _run(shard, Read(KEY, 3))
    assert read.error is ErrorCode.none and read.state.start_offset == UNINITIALIZED
    records, answer = _run(shard, Initialize(KEY, 1, 100))
    assert answer.error is ErrorCode.none and records == [(KEY, answer.state)]
    assert answer.state.create_ms == 1_000  # the injected clock's time
    assert _run(shard, Read(KEY, 2))[1].error is ErrorCode.fenced_leader_epoch  # a read recorded 3
    batch = (StateRange(100, 104, RecordState.ACKNOWLEDGED, 1),)
    assert _run(shard, Write(KEY, 0, 3, -1, batch))[1].error is ErrorCode.fenced_state_epoch
    clock.advance(5)
    records, written = _run(shard, Write(KEY, 1, 3, 105, batch))
    assert written.error is ErrorCode.none and written.state.start_offset == 105
    assert written.state.write_ms == 1_005 and len(records) == 1
    assert _run(shard, Initialize(KEY, 1, 0))[1].error is ErrorCode.fenced_state_epoch
    assert _run(shard, Summary(KEY))[1].state == written.state


def test_a_deleted_key_leaves_nothing_behind():
    shard = _shard(ManualClock())
    _run(shard, Read(KEY, 7))
    _run(shard, Initialize(KEY, 1, 0))
    assert len(shard) == 1
    records, answer = _run(shard, Delete(KEY))
    assert records == [(KEY, None)] and answer.error is ErrorCode.none
    assert len(shard) == 0  # its state and the leader epoch its read recorded
    assert _run(shard, Read(KEY, 0))[1].error is ErrorCode.none  # epoch 7 is forgotten
    assert _run(shard, Delete(("other", uuid.uuid4(), 0)))[0] == []  # nothing to delete: nothing written


def test_a_failed_write_puts_back_each_key_it_changed():
    clock, undo = ManualClock(1_000), UndoLog()
    shard = _shard(clock, undo)
    other = ("group", uuid.uuid4(), 1)
    _run(shard, Initialize(KEY, 1, 100))
    _run(shard, Read(KEY, 4))
    undo.recording = True  # loaded: what follows is replayed before its write
    _, stored = _run(shard, Read(KEY, 4))
    undo.keep()
    _run(shard, Write(KEY, 1, 4, 150, (StateRange(150, 159, RecordState.ACKNOWLEDGED, 0),)))
    _run(shard, Delete(KEY))
    _run(shard, Initialize(other, 1, 7))
    assert undo.revert() == 2  # the write's records are not in the log
    _, after = _run(shard, Read(KEY, 4))
    assert after.state == stored.state  # the state before the write, and its leader epoch still fences
    assert _run(shard, Read(KEY, 3))[1].error is ErrorCode.fenced_leader_epoch
    assert _run(shard, Read(other, 0))[1].state.start_offset == UNINITIALIZED
