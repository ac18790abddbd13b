"""Rebuilding the classic groups and their committed offsets from `__consumer_offsets`: the
records a load replays (group_loading.py, past the consumer, share and streams groups' own
replays) become the GroupCoordinator's group objects, as Kafka's loadGroupsAndOffsets.

A transaction's offsets are pending until its marker (pending_offsets.py); offsets.py keeps
them live by the same rules.
"""

from __future__ import annotations

import logging
from typing import Iterable

from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import StoredMarker, StoredRecord
from broker.groups.group import Group, Member
from broker.groups.state import GroupState

log = logging.getLogger(__name__)


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
