"""Committed offsets: OffsetCommit's checks, OffsetFetch, and rebuilding groups from the log.

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
from typing import Iterable

from replica.partition import now_ms
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import StoredRecord, offset_commit_error
from broker.groups.group import CommittedOffset, Group, Member
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
                    instance_id: str | None) -> tuple[str | None, Member | None]:
    if group is None:
        return (None, None) if generation < 0 else ("illegal_generation", None)
    if group.state is GroupState.DEAD:
        return "coordinator_not_available", None
    if generation >= 0 or member_id or instance_id is not None:
        member, code = group.validate_member(member_id, instance_id, generation)
        if code:
            return code, None
        return transition(group.state, Event.COMMIT).error, member
    if group.state is not GroupState.EMPTY:
        return "unknown_member_id", None  # a simple commit into a group that has members
    return None, None


async def commit(coord: GroupCoordinator, broker, group_id: str, generation: int, member_id: str,
                 instance_id: str | None, wanted: list[OffsetToCommit]) -> list[str]:
    """One Kafka error name per entry of `wanted`, in order."""
    if not group_id:
        return ["invalid_group_id"] * len(wanted)
    not_here = coord.coordinator_error(group_id)
    if not_here:
        return [not_here] * len(wanted)
    group = coord.groups.get(group_id)
    code, member = _commit_allowed(group, generation, member_id, instance_id)
    if code:
        return [code] * len(wanted)
    if group is None:
        group = coord.groups[group_id] = Group(group_id, state_timestamp=now_ms())
    if member is not None:
        coord._heartbeat(group, member)
    now = now_ms()
    codes, records, accepted = [], [], []
    for w in wanted:
        topic = broker.topics.get(w.topic)  # in a cluster most partitions are hosted elsewhere
        if topic is None or not 0 <= w.partition < len(topic.partitions):
            codes.append("unknown_topic_or_partition")
        elif w.metadata is not None and len(w.metadata.encode()) > MAX_METADATA_BYTES:
            codes.append("offset_metadata_too_large")
        else:
            value = CommittedOffset(w.offset, w.leader_epoch, w.metadata or "", now)
            records.append((offsets_log.offset_key(group_id, w.topic, w.partition), offsets_log.offset_value(value)))
            accepted.append(((w.topic, w.partition), value))
            codes.append("none")
    if records:
        written = await coord._store.append(group_id, records)
        if written != "none":
            log.info("group %s: writing offsets failed: %s", group_id, written)
            failed = offset_commit_error(written)
            return [failed if c == "none" else c for c in codes]
        group.offsets.update(accepted)
    return codes


def fetch(coord: GroupCoordinator, group_id: str, wanted: list[tuple[str, list[int]]] | None
          ) -> list[tuple[str, list[tuple[int, CommittedOffset | None]]]]:
    """Committed offsets per topic; `wanted` None means every partition the group committed."""
    group = coord.groups.get(group_id)
    offsets = group.offsets if group is not None else {}
    if wanted is None:
        by_topic: dict[str, list[tuple[int, CommittedOffset | None]]] = {}
        for (topic, partition), value in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, value))
        return list(by_topic.items())
    return [(topic, [(p, offsets.get((topic, p))) for p in partitions]) for topic, partitions in wanted]


def load(coord: GroupCoordinator, records: Iterable[StoredRecord]) -> set[str]:
    """Rebuild groups from `__consumer_offsets` records (offsets_store.replay, or one
    partition's replay_partition); restored members get a fresh session. Returns the ids of
    the groups the records left in the coordinator."""
    count, touched = 0, set()
    for record in records:
        try:
            kind, fields = offsets_log.decode_key(record.key)
            if kind == "offset":
                _apply_offset(coord, fields, record.value)
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
            coord._heartbeat(group, member)
    if count:
        log.info("loaded %d groups from %d %s records", len(loaded), count, offsets_log.TOPIC)
    return loaded


def _apply_offset(coord: GroupCoordinator, fields: tuple, value: bytes | None) -> None:
    group_id, topic, partition = fields
    group = coord.groups.get(group_id)
    if value is None:
        if group is not None:
            group.offsets.pop((topic, partition), None)
        return
    committed = offsets_log.decode_offset_value(value)  # first: a skipped record leaves no empty group
    if group is None:
        group = coord.groups[group_id] = Group(group_id)
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


async def delete_groups(coord: GroupCoordinator, group_ids: list[str]) -> list[str]:
    codes = []
    for group_id in group_ids:
        not_here = coord.coordinator_error(group_id)
        if not_here:
            codes.append(not_here)
            continue
        group = coord.groups.get(group_id)
        if group is None:
            codes.append("group_id_not_found")
            continue
        outcome = transition(group.state, Event.DELETE)
        if outcome.error:
            codes.append(outcome.error)
            continue
        tombstones = [(offsets_log.offset_key(group_id, t, p), None) for t, p in group.offsets]
        tombstones.append((offsets_log.group_key(group_id), None))
        written = await coord._store.append(group_id, tombstones)
        if written != "none":
            log.info("group %s: writing tombstones failed: %s", group_id, written)
            codes.append(offset_commit_error(written))
            continue
        group.state = outcome.next
        coord.groups.pop(group_id, None)
        codes.append("none")
    return codes
