"""Share groups from their records in `__consumer_offsets` (types 10-15), in log order: the only
way a share group changes, as in Kafka's GroupMetadataManager.replay.

- `replaying` sits in the stream of records a load reads (group_loading.py), as the consumer
  groups' replay does (consumer/replay.py): it applies the share group records as they pass and
  hands every other record on. Once the stream ends, each replayed member gets a session from
  now (share_coordinator.restored), as Kafka's onLoaded gives it: a member that heartbeats at its
  epoch goes on with its assignment, one that does not is fenced at its session timeout.
- `replay_written` applies a record a change of the coordinator returned (share_coordinator.py
  works its change out and puts the group back; the runtime replays the records here before it
  writes them). Before a group's first record since the last write it saves the group (undo.py):
  a write that fails with nothing appended puts it back as it was (share_group_snapshot.py).

A record changes the group as it says, whether loaded or just written: a member's tombstone
removes it (its session timer finds it gone), a tombstone of a group the replay does not know
brings nothing back, and the group epoch's tombstone deletes the group.
"""

from __future__ import annotations

import logging
from typing import Iterable, Iterator

from broker.coordinator.undo import Restore, UndoLog
from broker.groups.offsets_log import KeyValue
from broker.groups.offsets_store import StoredMarker, StoredRecord, applying
from broker.groups.share import share_group_records as rec
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.share.share_group import LEAVE_EPOCH, ShareGroup, ShareMember
from broker.groups.share.share_group_snapshot import ShareGroupSnapshot

log = logging.getLogger(__name__)


def replaying(coordinator: ShareGroupCoordinator,
              records: Iterable[StoredRecord | StoredMarker]) -> Iterator[StoredRecord | StoredMarker]:
    touched: set[str] = set()
    yield from applying(records, lambda key: rec.key_type(key) in rec.TYPES,
                        lambda record: touched.add(_apply(coordinator.groups, record)), "share group")
    coordinator.restored(touched)
    if touched:
        groups = [coordinator.groups[g] for g in touched if g in coordinator.groups]
        log.info("loaded %d share groups with %d members", len(groups), sum(len(g.members) for g in groups))


def replay_written(coordinator: ShareGroupCoordinator, record: KeyValue, undo: UndoLog) -> None:
    group_id = rec.decode_key(record.key)[1]
    undo.save(("share group", group_id), lambda: _saving(coordinator.groups, group_id))
    _apply(coordinator.groups, record)


def _saving(groups: dict[str, ShareGroup], group_id: str) -> Restore:
    group = groups.get(group_id)
    if group is None:
        def forget() -> None:  # the group the refused records made
            groups.pop(group_id, None)
        return forget
    saved = ShareGroupSnapshot(group)

    def restore() -> None:
        saved.restore(group)
        groups[group_id] = group  # back if its tombstone deleted it
    return restore


def _apply(groups: dict[str, ShareGroup], record: StoredRecord | KeyValue) -> str:
    record_type, group_id, member_id = rec.decode_key(record.key)
    value = record.value
    group = groups.get(group_id)
    if value is None:
        if group is not None:
            _delete(groups, group, record_type, member_id)
        return group_id
    if group is None:
        group = groups[group_id] = ShareGroup(group_id)
    if record_type == rec.GROUP_METADATA:
        group.epoch, group.metadata_hash = rec.decode_group_metadata(value)
    elif record_type == rec.TARGET_METADATA:
        group.assignment_epoch = rec.decode_target_metadata(value)
    elif record_type == rec.TARGET_MEMBER:
        group.targets[member_id] = rec.decode_target_member(value)
    elif record_type == rec.STATE_PARTITION_METADATA:
        group.state_partitions = rec.decode_state_partitions(value)
    else:
        member = group.members.get(member_id)
        if member is None:
            member = group.members[member_id] = ShareMember(member_id, "", "")
        if record_type == rec.MEMBER_METADATA:
            m = rec.decode_member_metadata(value)
            member.rack_id, member.client_id, member.client_host, member.subscribed = (
                m.rack_id, m.client_id, m.client_host, m.subscribed)
        else:
            member.epoch, member.previous_epoch, member.assignment = rec.decode_current_assignment(value)
    return group_id


def _delete(groups: dict[str, ShareGroup], group: ShareGroup, record_type: int, member_id: str | None) -> None:
    if record_type == rec.GROUP_METADATA:
        del groups[group.group_id]  # the group was deleted
    elif record_type == rec.TARGET_METADATA:
        group.assignment_epoch = 0
    elif record_type == rec.TARGET_MEMBER:
        group.targets.pop(member_id, None)
    elif record_type == rec.STATE_PARTITION_METADATA:
        group.state_partitions = {}
    elif record_type == rec.MEMBER_METADATA:
        group.members.pop(member_id, None)
    elif member_id in group.members:  # its current assignment only, as Kafka's replay reads it
        member = group.members[member_id]
        member.epoch = member.previous_epoch = LEAVE_EPOCH
        member.assignment = {}
