"""The share-partition states of one `__share_group_state` partition (Kafka's
ShareCoordinatorShard): a shard of the coordinator runtime (broker/coordinator/runtime.py), which
loads it, runs its operations one at a time in order, writes the records they return and
replays them into it before the answer goes out.

Fencing as Kafka's: a read or write whose leader epoch is below the last one recorded for the key
is FENCED_LEADER_EPOCH (a deposed share-partition leader); a write whose state epoch is below the
stored one, or an initialize whose state epoch is not above it, FENCED_STATE_EPOCH. A read
records its leader epoch (in memory, as Kafka's does). A write's batches are laid over the stored
ones (state_log.overlay) and the whole result written as one record. A summary (the group
coordinator's read, for an admin) records no leader epoch and fences nothing; a delete writes a
tombstone, whose replay forgets the key's state and its leader epoch, as Kafka's deleteState.
A write that fails puts each key it changed back (broker/coordinator/undo.py).
"""

from __future__ import annotations

from typing import NamedTuple

from wire.error_codes import ErrorCode

from broker.coordinator.runtime import Outcome, ShardContext
from broker.coordinator.undo import Restore
from broker.groups.share import state_log
from broker.groups.share.share_partition import StateRange

Key = state_log.Key
Record = tuple[Key, state_log.ShareState | None]  # None: the key's state is deleted
UNINITIALIZED = -1  # the start offset a read answers for a share-partition with no state


class StateAnswer(NamedTuple):
    error: ErrorCode
    message: str | None = None
    state: state_log.ShareState | None = None
    summary: state_log.StateSummary | None = None  # a remote coordinator's ReadShareGroupStateSummary


class Read(NamedTuple):
    key: Key
    leader_epoch: int


class Write(NamedTuple):
    key: Key
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateRange, ...]


class Initialize(NamedTuple):
    key: Key
    state_epoch: int
    start_offset: int


class Summary(NamedTuple):
    key: Key


class Delete(NamedTuple):
    key: Key


Op = Read | Write | Initialize | Summary | Delete


class ShareStateShard:
    def __init__(self, context: ShardContext[Op]) -> None:
        self._clock = context.clock
        self._states: dict[Key, state_log.ShareState] = {}
        self._read_epochs: dict[Key, int] = {}  # leader epochs reads recorded
        self._undo = context.undo

    def replay(self, record: Record) -> None:
        key, state = record
        self._undo.save(key, lambda: self._saving(key))
        if state is None:
            self._states.pop(key, None)
            self._read_epochs.pop(key, None)
        else:
            self._states[key] = state

    def _saving(self, key: Key) -> Restore:
        state, read_epoch = self._states.get(key), self._read_epochs.get(key)

        def restore() -> None:
            if state is None:
                self._states.pop(key, None)
            else:
                self._states[key] = state
            if read_epoch is not None:  # a tombstone forgot it; a read since only raised it
                self._read_epochs.setdefault(key, read_epoch)
        return restore

    def loaded(self) -> None:
        pass  # nothing runs between requests

    def unloaded(self) -> None:
        pass  # nothing outside the shard

    def handle(self, op: Op) -> Outcome[Record, StateAnswer]:
        match op:
            case Read(key, leader_epoch):
                if leader_epoch < self._leader_epoch(key):
                    return _answer(ErrorCode.fenced_leader_epoch, f"leader epoch {leader_epoch} is not the latest")
                self._read_epochs[key] = max(leader_epoch, self._read_epochs.get(key, -1))
                return Outcome([], StateAnswer(ErrorCode.none, None, self._kept_or_none(key)))
            case Write():
                return self._write(op)
            case Initialize(key, state_epoch, start_offset):
                kept = self._states.get(key)
                if kept is not None and state_epoch <= kept.state_epoch:
                    return _answer(ErrorCode.fenced_state_epoch,
                                   f"state epoch {state_epoch} is not above {kept.state_epoch}")
                now = self._clock.now_ms()
                new = state_log.ShareState(state_epoch, -1, start_offset, (),
                                           (kept.snapshot_epoch + 1) if kept else 0, now, now)
                return Outcome([(key, new)], StateAnswer(ErrorCode.none, None, new))
            case Summary(key):
                return Outcome([], StateAnswer(ErrorCode.none, None, self._kept_or_none(key)))
            case Delete(key):
                return Outcome([(key, None)] if key in self._states else [], StateAnswer(ErrorCode.none))
        raise TypeError(f"not a share-state operation: {op!r}")

    def _write(self, op: Write) -> Outcome[Record, StateAnswer]:
        key, state_epoch, leader_epoch = op.key, op.state_epoch, op.leader_epoch
        kept = self._states.get(key)
        if leader_epoch < self._leader_epoch(key):
            return _answer(ErrorCode.fenced_leader_epoch, f"leader epoch {leader_epoch} is not the latest")
        if kept is not None and state_epoch < kept.state_epoch:
            return _answer(ErrorCode.fenced_state_epoch, f"state epoch {state_epoch} is below {kept.state_epoch}")
        start = op.start_offset if op.start_offset >= 0 else (kept.start_offset if kept else 0)
        now = self._clock.now_ms()
        new = state_log.ShareState(
            max(state_epoch, kept.state_epoch if kept else 0), max(leader_epoch, kept.leader_epoch if kept else -1),
            start, state_log.overlay(kept.batches if kept else (), op.batches, start),
            (kept.snapshot_epoch + 1) if kept else 0, kept.create_ms if kept else now, now)
        return Outcome([(key, new)], StateAnswer(ErrorCode.none, None, new))

    def _leader_epoch(self, key: Key) -> int:
        kept = self._states.get(key)
        return max(self._read_epochs.get(key, -1), kept.leader_epoch if kept else -1)

    def _kept_or_none(self, key: Key) -> state_log.ShareState:
        return self._states.get(key) or state_log.ShareState(0, -1, UNINITIALIZED, ())

    def __len__(self) -> int:
        """Keys with state or a recorded leader epoch."""
        return len(self._states.keys() | self._read_epochs.keys())


def _answer(error: ErrorCode, message: str) -> Outcome[Record, StateAnswer]:
    return Outcome([], StateAnswer(error, message))
