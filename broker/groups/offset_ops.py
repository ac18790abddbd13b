"""The committed offsets' part of a `__consumer_offsets` shard (Kafka's OffsetMetadataManager):
the operations that write offsets and tombstones, handled in their partition's turn by the
coordinator runtime (group_loading.py's shard hands them here), and the replay of the records
they return into the classic group objects, which keep every group's offsets whatever its kind.

- `Commit`: OffsetCommit by the classic rules: a member of the current generation (also while
  the group prepares a rebalance, not while it waits for the leader's assignment), whose session
  the commit renews, or anyone with generation -1 and no member id while the group has no
  members (the admin's and `assign()` consumers' path); `WriteOffsets`: offsets whose committer
  a consumer or streams group checked already (its member epochs).
- `DeleteOffsets`: OffsetDelete's tombstones (offset_deletion.py has its rules).
- `TxnCommit`: TxnOffsetCommit's offsets, pending in the producer's transaction, a transactional
  write of their own (txn_offsets.py has its rules).
- `DeleteGroup`: DeleteGroups of a classic group: a tombstone for each of its offsets, also one
  only an open transaction wrote (Kafka's deleteAllOffsets: a replay cannot bring that
  transaction's offsets back into a group of the same name), and one for the group.

`handle` checks against the state as the operations before it left it and returns the records
and the answer; the runtime replays them (`replay`) before it writes them, so the next
operation sees them, and answers once they are written. A value not written yet has
record_offset -1: it is the latest of its partition (pending_offsets.keep_later) until
OffsetsStore.append_records stamps where it went; OffsetFetch does not see it until it is
replicated (committed_offset.UnreplicatedOffsets). A write that fails puts back each group and
partition its records changed (broker/coordinator/undo.py), as the log holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, NamedTuple

from wire.error_codes import ErrorCode
from broker.api.topic_lookup import TopicLookup
from broker.coordinator.runtime import Outcome
from broker.coordinator.undo import Restore, UndoLog
from broker.groups.committed_offset import CommittedOffset
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group import Group, Member
from broker.groups.offset_deletion import CONSUMER_PROTOCOL, is_subscribed
from broker.groups.committed_offset import OffsetRecord
from broker.groups.offsets_log import GroupTombstone, Written
from broker.groups.state import Event, GroupState, transition
from broker.groups.txn_offsets import TxnCommit

MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes


@dataclass
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


class Commit(NamedTuple):
    group_id: str
    generation: int
    member_id: str
    instance_id: str | None
    wanted: list[OffsetToCommit]


class WriteOffsets(NamedTuple):
    group_id: str
    wanted: list[OffsetToCommit]


class DeleteOffsets(NamedTuple):
    group_id: str
    wanted: list[tuple[str, list[int]]]
    consumer_subscribed: Callable[[str], bool] | None  # a consumer or streams group's: see delete_offsets


class DeleteGroup(NamedTuple):
    group_id: str


OffsetOp = Commit | WriteOffsets | DeleteOffsets | DeleteGroup | TxnCommit
Deleted = tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]  # the request's error, each partition's


def offsets_to_commit(group_id: str, wanted: list[OffsetToCommit], topics: TopicLookup,
                      now_ms: int) -> tuple[list[ErrorCode], list[OffsetRecord]]:
    """For a commit (plain or transactional): Kafka's error for each entry of `wanted`, and the
    records of those accepted."""
    codes: list[ErrorCode] = []
    records: list[OffsetRecord] = []
    for w in wanted:
        topic = topics.get(w.topic)  # in a cluster most partitions are hosted elsewhere
        if topic is None or not 0 <= w.partition < len(topic.partitions):
            codes.append(ErrorCode.unknown_topic_or_partition)
        elif w.metadata is not None and len(w.metadata.encode()) > MAX_METADATA_BYTES:
            codes.append(ErrorCode.offset_metadata_too_large)
        else:
            value = CommittedOffset(w.offset, w.leader_epoch, w.metadata or "", now_ms)
            records.append(OffsetRecord(group_id, (w.topic, w.partition), value))
            codes.append(ErrorCode.none)
    return codes, records


def commit_allowed(group: Group | None, generation: int, member_id: str,
                   instance_id: str | None) -> tuple[ErrorCode | None, Member | None]:
    if group is None:
        return (None, None) if generation < 0 else (ErrorCode.illegal_generation, None)
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available, None
    if generation >= 0 or member_id or instance_id is not None:
        member, code = group.validate_member(member_id, instance_id, generation)
        if code:
            return code, None
        return transition(group.state, Event.COMMIT).error, member
    if group.state is not GroupState.EMPTY:
        return ErrorCode.unknown_member_id, None  # a simple commit into a group that has members
    return None, None


class OffsetOps:
    def __init__(self, coordinator: GroupCoordinator, topics: TopicLookup) -> None:
        self._coordinator = coordinator
        self._topics = topics

    def handle(self, op: OffsetOp) -> Outcome[Written, object]:
        match op:
            case Commit(group_id, generation, member_id, instance_id, wanted):
                group = self._coordinator.groups.get(group_id)
                code, member = commit_allowed(group, generation, member_id, instance_id)
                if code:
                    return Outcome([], [code] * len(wanted))
                if group is not None and member is not None:
                    self._coordinator.rebalance.keep_alive(group, member)
                return self._write(group_id, wanted)
            case WriteOffsets(group_id, wanted):
                return self._write(group_id, wanted)
            case DeleteOffsets():
                return self._delete_offsets(op)
            case DeleteGroup(group_id):
                return self._delete_group(group_id)
            case TxnCommit(_, records):
                return Outcome(records, None)  # pending once replayed, settled by the producer's marker
        raise TypeError(f"not an offsets operation: {op!r}")

    def replay(self, record: OffsetRecord | GroupTombstone, undo: UndoLog) -> None:
        """A record an operation returned, applied as a load applies it (offsets_replay.py)."""
        groups = self._coordinator.groups
        undo.save(("group", record.group_id), partial(self._saving_group, record.group_id))
        if isinstance(record, GroupTombstone):
            group = groups.pop(record.group_id, None)
            if group is not None:
                group.state = GroupState.DEAD  # a timer or a request still holding it finds it dead
            return
        undo.save(("offset", record.group_id, record.partition),
                  partial(self._saving_offset, record.group_id, record.partition))
        group = groups.get(record.group_id)
        if group is None:
            if record.value is None:
                return
            group = groups[record.group_id] = Group(record.group_id, state_timestamp=self._coordinator.timers.now_ms())
        if record.producer_id >= 0 and record.value is not None:  # a transaction's, until its marker
            group.pending_txn_offsets.add(record.producer_id, record.partition, record.value)
            return
        group.unreplicated.written(record, group.offsets.get(record.partition))
        if record.value is None:  # a tombstone ends an open transaction's offset too, as its replay does
            group.offsets.pop(record.partition, None)
            group.pending_txn_offsets.drop_partition(record.partition)
        else:
            group.offsets[record.partition] = record.value  # the log's latest once written

    def _saving_group(self, group_id: str) -> Restore:
        """How to put back the group as it is now: the group a tombstone dropped, or none where a
        commit made one (unless a member joined it meanwhile: the classic coordinator's own)."""
        groups = self._coordinator.groups
        group = groups.get(group_id)
        state = group.state if group is not None else GroupState.DEAD

        def restore() -> None:
            if group is not None:
                groups[group_id] = group
                group.state = state
                return
            made = groups.get(group_id)
            if made is not None and not made.members and not made.offsets:
                del groups[group_id]
        return restore

    def _saving_offset(self, group_id: str, partition: tuple[str, int]) -> Restore:
        """How to put back the group's offset of `partition` as it is now (the value, what OffsetFetch
        sees of it, the open transactions' offsets a tombstone drops)."""
        groups = self._coordinator.groups
        group = groups.get(group_id)
        value = group.offsets.get(partition) if group is not None else None
        unreplicated = group.unreplicated.kept(partition) if group is not None else None
        pending = group.pending_txn_offsets.of_partition(partition) if group is not None else {}

        def restore() -> None:
            now = groups.get(group_id)
            if now is None:
                return
            if value is None:
                now.offsets.pop(partition, None)
            else:
                now.offsets[partition] = value
            now.unreplicated.put_back(partition, unreplicated)
            now.pending_txn_offsets.put_back(partition, pending)
        return restore

    def _write(self, group_id: str, wanted: list[OffsetToCommit]) -> Outcome[Written, object]:
        codes, records = offsets_to_commit(group_id, wanted, self._topics, self._coordinator.timers.now_ms())
        return Outcome(records, codes)

    def _delete_offsets(self, op: DeleteOffsets) -> Outcome[Written, object]:
        group = self._coordinator.groups.get(op.group_id)
        subscribed = op.consumer_subscribed
        if subscribed is None:
            if group is None or group.state is GroupState.DEAD:
                return Outcome([], (ErrorCode.group_id_not_found, {}))
            if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL:
                return Outcome([], (ErrorCode.non_empty_group, {}))
            subscribed = partial(is_subscribed, group)
        codes: dict[tuple[str, int], ErrorCode] = {}
        records: list[Written] = []
        for topic, partitions in op.wanted:
            taken = subscribed(topic)
            for p in partitions:
                codes[(topic, p)] = ErrorCode.group_subscribed_to_topic if taken else ErrorCode.none
                if not taken and group is not None and (
                        (topic, p) in group.offsets or group.pending_txn_offsets.is_pending((topic, p))):
                    records.append(OffsetRecord(op.group_id, (topic, p), None))
        return Outcome(records, (ErrorCode.none, codes))

    def _delete_group(self, group_id: str) -> Outcome[Written, object]:
        group = self._coordinator.groups.get(group_id)
        if group is None:
            return Outcome([], ErrorCode.group_id_not_found)
        outcome = transition(group.state, Event.DELETE)
        if outcome.error:
            return Outcome([], outcome.error)
        partitions = sorted(set(group.offsets) | group.pending_txn_offsets.partitions())
        records: list[Written] = [OffsetRecord(group_id, partition, None) for partition in partitions]
        records.append(GroupTombstone(group_id))
        return Outcome(records, ErrorCode.none)
