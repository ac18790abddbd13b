"""Committed offsets: OffsetCommit's checks, OffsetFetch, and rebuilding groups from the log
(with the offsets transactions wrote, txn_offsets.py, kept pending until their marker,
pending_offsets.py).

A commit is acknowledged only after its records are appended to `__consumer_offsets`
(offsets_store) and, in a cluster, reached every in-sync replica: what a client was told is
committed is what a restarted broker, or the next leader of the partition, replays.
Who may commit follows Kafka's classic rules: a member of the current generation (also
while the group prepares a rebalance, not while it waits for the leader's assignment), or
anyone with generation -1 and no member id while the group has no members (the admin and
`assign()` consumers' path).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable

from wire.error_codes import ErrorCode
from replica.partition import now_ms
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import StoredMarker, StoredRecord, offset_commit_error
from broker.groups.committed_offset import CommittedOffset
from broker.groups.group import Group, Member
from broker.groups.pending_offsets import keep_later
from broker.groups.state import Event, GroupState, transition

log = logging.getLogger(__name__)

MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes


@dataclass
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


def _commit_allowed(group: Group | None, generation: int, member_id: str,
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


async def commit(coord: GroupCoordinator, broker, group_id: str, generation: int, member_id: str,
                 instance_id: str | None, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
    """Kafka's error for each entry of `wanted`, in order."""
    if not group_id:
        return [ErrorCode.invalid_group_id] * len(wanted)
    not_here = coord.coordinator_error(group_id)
    if not_here:
        return [not_here] * len(wanted)
    group = coord.groups.get(group_id)
    code, member = _commit_allowed(group, generation, member_id, instance_id)
    if code:
        return [code] * len(wanted)
    if member is not None:
        coord.rebalance.keep_alive(group, member)
    return await write(coord, broker, group_id, wanted)


async def write(coord: GroupCoordinator, broker, group_id: str, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
    """Store offsets whose committer has been checked, by the classic rules above or by a
    consumer group's (consumer/coordinator.py): committed offsets live in the group object of
    that id, whatever its protocol."""
    group = coord.groups.get(group_id)
    if group is None:
        group = coord.groups[group_id] = Group(group_id, state_timestamp=now_ms())
    codes, records, accepted = offset_records(broker, group_id, wanted)
    if records:
        written = await coord._store.append(group_id, records, appended=stamp_record_offsets(accepted))
        if written is not ErrorCode.none:
            log.info("group %s: writing offsets failed: %s", group_id, written.name)
            failed = offset_commit_error(written)
            return [failed if c is ErrorCode.none else c for c in codes]
        for partition, value in accepted:  # a transaction that ended meanwhile may hold a later record
            keep_later(group.offsets, partition, value)
    return codes


def offset_records(broker, group_id: str, wanted: list[OffsetToCommit]) -> tuple[list[ErrorCode], list, list]:
    """For a commit (plain or transactional): Kafka's error for each entry of `wanted`, the
    __consumer_offsets records of those accepted, and their (partition, value) pairs."""
    now = now_ms()
    codes, records, accepted = [], [], []
    for w in wanted:
        topic = broker.topics.get(w.topic)  # in a cluster most partitions are hosted elsewhere
        if topic is None or not 0 <= w.partition < len(topic.partitions):
            codes.append(ErrorCode.unknown_topic_or_partition)
        elif w.metadata is not None and len(w.metadata.encode()) > MAX_METADATA_BYTES:
            codes.append(ErrorCode.offset_metadata_too_large)
        else:
            value = CommittedOffset(w.offset, w.leader_epoch, w.metadata or "", now)
            records.append((offsets_log.offset_key(group_id, w.topic, w.partition), offsets_log.offset_value(value)))
            accepted.append(((w.topic, w.partition), value))
            codes.append(ErrorCode.none)
    return codes, records, accepted


def stamp_record_offsets(accepted: list[tuple[tuple[str, int], CommittedOffset]]) -> Callable[[int], None]:
    """What OffsetsStore.append calls with its batch's first offset: each value learns where its
    record went (the batch holds one record per accepted value, in order)."""
    def stamp(first_offset: int) -> None:
        for i, (_, value) in enumerate(accepted):
            value.record_offset = first_offset + i
    return stamp


def fetch(coord: GroupCoordinator, group_id: str, wanted: list[tuple[str, list[int]]] | None,
          require_stable: bool = False) -> list[tuple[str, list[tuple[int, CommittedOffset | None, ErrorCode]]]]:
    """Committed offsets per topic, each with its error; `wanted` None means every partition the
    group committed. `require_stable` (OffsetFetch v7+): a partition an open transaction wrote
    an offset for answers UNSTABLE_OFFSET_COMMIT and no offset, as Kafka does."""
    group = coord.groups.get(group_id)
    offsets = group.offsets if group is not None else {}
    unstable = group.pending_txn_offsets.partitions() if group is not None and require_stable else set()

    def answer(topic: str, p: int) -> tuple[int, CommittedOffset | None, ErrorCode]:
        if (topic, p) in unstable:
            return p, None, ErrorCode.unstable_offset_commit
        return p, offsets.get((topic, p)), ErrorCode.none

    if wanted is None:
        by_topic: dict[str, list[tuple[int, CommittedOffset | None, str]]] = {}
        for topic, partition in sorted(offsets):
            by_topic.setdefault(topic, []).append(answer(topic, partition))
        return list(by_topic.items())
    return [(topic, [answer(topic, p) for p in partitions]) for topic, partitions in wanted]


def end_transaction(coord: GroupCoordinator, partition_index: int, producer_id: int, marker_offset: int,
                    commit: bool) -> None:
    """A COMMIT or ABORT marker of the producer is at `marker_offset` in `__consumer_offsets`
    partition `partition_index` (broker/txn/marker_append.py, once replicated, as Kafka's
    onTransactionCompleted): the pending offsets it wrote for that partition's groups end."""
    for group in coord.groups.values():
        if group.pending_txn_offsets.has_producer(producer_id) \
                and coord._store.partition_index(group.group_id) == partition_index:
            group.pending_txn_offsets.end(producer_id, marker_offset, commit, group.offsets)


def load(coord: GroupCoordinator, records: Iterable[StoredRecord | StoredMarker]) -> set[str]:
    """Rebuild groups from `__consumer_offsets` records and markers (offsets_store.replay, or one
    partition's replay_partition); restored members get a fresh session. Returns the ids of the
    groups the records left in the coordinator.

    As Kafka's loadGroupsAndOffsets: a transaction's offsets are pending until its marker; a
    COMMIT applies them, an ABORT drops them, and those whose marker is not in the log stay
    pending (the coordinator still ends that transaction, live, with its marker)."""
    count, touched = 0, set()
    open_txns: dict[tuple[int, int], set[str]] = {}  # (partition, producer) -> groups it wrote to
    for record in records:
        if isinstance(record, StoredMarker):
            for group_id in open_txns.pop((record.partition, record.producer_id), ()):
                group = coord.groups.get(group_id)
                if group is not None:
                    group.pending_txn_offsets.end(record.producer_id, record.offset, record.commit, group.offsets)
            continue
        try:
            kind, fields = offsets_log.decode_key(record.key)
            if kind == "offset":
                _apply_offset(coord, fields, record)
                if record.producer_id >= 0:
                    open_txns.setdefault((record.partition, record.producer_id), set()).add(fields[0])
            else:
                _apply_group(coord, fields[0], record.value)
            touched.add(fields[0])
            count += 1
        except offsets_log.BadRecord as exc:
            log.warning("skipping unreadable %s record in partition %d at offset %d: %s",
                        offsets_log.TOPIC, record.partition, record.offset, exc)
    loaded = {group_id for group_id in touched if group_id in coord.groups}
    for group_id in loaded:
        group = coord.groups[group_id]
        for member in group.members.values():
            coord.rebalance.keep_alive(group, member)
    if count:
        log.info("loaded %d groups from %d %s records", len(loaded), count, offsets_log.TOPIC)
    return loaded


def _apply_offset(coord: GroupCoordinator, fields: tuple, record: StoredRecord) -> None:
    group_id, topic, partition = fields
    group = coord.groups.get(group_id)
    if record.value is None:
        if group is not None:
            group.offsets.pop((topic, partition), None)
            group.pending_txn_offsets.drop_partition((topic, partition))
        return
    committed = offsets_log.decode_offset_value(record.value)  # first: a skipped record leaves no empty group
    committed.record_offset = record.offset
    if group is None:
        group = coord.groups[group_id] = Group(group_id)
    if record.producer_id >= 0:
        group.pending_txn_offsets.add(record.producer_id, (topic, partition), committed)
    else:
        group.offsets[(topic, partition)] = committed


def _apply_group(coord: GroupCoordinator, group_id: str, value: bytes | None) -> None:
    if value is None:
        coord.groups.pop(group_id, None)
        return
    record = offsets_log.decode_group_value(value)
    group = coord.groups.get(group_id)
    if group is None:
        group = coord.groups[group_id] = Group(group_id)
    group.generation, group.protocol_type = record.generation, record.protocol_type or None
    group.protocol_name, group.leader_id = record.protocol, record.leader
    group.state_timestamp = record.state_timestamp
    group.members = {
        m.member_id: Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.session_timeout_ms, m.rebalance_timeout_ms, record.protocol_type,
                            [(record.protocol or "", m.subscription)], assignment=m.assignment)
        for m in record.members
    }
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY


async def delete_groups(coord: GroupCoordinator, group_ids: list[str]) -> list[ErrorCode]:
    codes = []
    for group_id in group_ids:
        not_here = coord.coordinator_error(group_id)
        if not_here:
            codes.append(not_here)
            continue
        group = coord.groups.get(group_id)
        if group is None:
            codes.append(ErrorCode.group_id_not_found)
            continue
        outcome = transition(group.state, Event.DELETE)
        if outcome.error:
            codes.append(outcome.error)
            continue
        # Kafka's deleteAllOffsets: a partition only an open transaction wrote gets one too, so
        # a replay cannot bring that transaction's offsets back into a group of the same name
        partitions = sorted(set(group.offsets) | group.pending_txn_offsets.partitions())
        tombstones = [(offsets_log.offset_key(group_id, t, p), None) for t, p in partitions]
        tombstones.append((offsets_log.group_key(group_id), None))
        written = await coord._store.append(group_id, tombstones)
        if written is not ErrorCode.none:
            log.info("group %s: writing tombstones failed: %s", group_id, written.name)
            codes.append(offset_commit_error(written))
            continue
        group.state = outcome.next
        coord.groups.pop(group_id, None)
        codes.append(ErrorCode.none)
    return codes
