"""Rebuilding streams groups from `__consumer_offsets`: records of types 17 and 19-23, in log order.

Like the consumer groups' replay (consumer/replay.py), `replaying` sits in the stream of records
a load reads (group_loading.py): it applies the streams group records as they pass and hands
every other record on. Once the stream ends, the coordinator configures each loaded group's
topology against the topics and gives every member a fresh session (coordinator.restored): a
member that heartbeats at its epoch goes on with its tasks, one that does not is removed at its
session timeout. The group epoch's tombstone deletes the group.
"""

from __future__ import annotations

import logging
from typing import Iterable, Iterator

from broker.groups.offsets_store import StoredMarker, StoredRecord, applying
from broker.groups.streams import records as rec
from broker.groups.streams.coordinator import StreamsGroupCoordinator
from broker.groups.streams.reconciliation import CurrentTasks
from broker.groups.streams.streams_group import StreamsGroup, StreamsMember

log = logging.getLogger(__name__)


def replaying(coordinator: StreamsGroupCoordinator,
              records: Iterable[StoredRecord | StoredMarker]) -> Iterator[StoredRecord | StoredMarker]:
    touched: set[str] = set()
    yield from applying(records, lambda key: rec.key_type(key) in rec.TYPES,
                        lambda record: touched.add(_apply(coordinator.groups, record)), "streams group")
    coordinator.restored(touched)
    if touched:
        loaded = [coordinator.groups[g] for g in touched if g in coordinator.groups]
        log.info("loaded %d streams groups with %d members", len(loaded), sum(len(g.members) for g in loaded))


def _apply(groups: dict[str, StreamsGroup], record: StoredRecord) -> str:
    record_type, group_id, member_id = rec.decode_key(record.key)
    value = record.value
    group = groups.get(group_id)
    if value is None:
        if group is None:
            return group_id
        if record_type == rec.GROUP_METADATA:
            for member in group.members.values():
                member.cancel_timers()
            del groups[group_id]
        elif record_type == rec.MEMBER_METADATA:
            member = group.members.pop(member_id, None)
            if member is not None:
                member.cancel_timers()
        elif record_type == rec.TARGET_MEMBER:
            group.targets.pop(member_id, None)
        elif record_type == rec.CURRENT_ASSIGNMENT and member_id in group.members:
            group.members[member_id].current = CurrentTasks()
        elif record_type == rec.TOPOLOGY:
            group.topology = None
        return group_id
    if group is None:
        group = groups[group_id] = StreamsGroup(group_id)
    if record_type == rec.GROUP_METADATA:
        group.epoch, group.validated_epoch = rec.decode_group_metadata(value)
    elif record_type == rec.TOPOLOGY:
        group.topology = rec.decode_topology(value)
    elif record_type == rec.TARGET_METADATA:
        group.assignment_epoch = rec.decode_epoch(value)
    elif record_type == rec.TARGET_MEMBER:
        group.targets[member_id] = rec.decode_tasks(value)
    else:
        member = group.members.get(member_id)
        if member is None:
            member = group.members[member_id] = StreamsMember(member_id)
        if record_type == rec.MEMBER_METADATA:
            member.metadata = rec.decode_member_metadata(value)
        else:
            member.current = rec.decode_current(value)
    return group_id
