"""Streams groups from their records in `__consumer_offsets` (types 17 and 19-23), in log order:
the only way what the records hold changes, as in Kafka's GroupMetadataManager.replay.

- `replaying` sits in the stream of records a load reads (group_loading.py), as the consumer
  groups' replay does (consumer/replay.py): it applies the streams group records as they pass
  and hands every other record on. Once the stream ends, the coordinator configures each loaded
  group's topology against the topics and gives every member a fresh session
  (coordinator.restored): a member that heartbeats at its epoch goes on with its tasks, one that
  does not is removed at its session timeout.
- `replay_written` applies a record the coordinator's change returned (coordinator.py works its
  change out and puts the group back; the runtime replays the records here before it writes
  them). Before a group's first record since the last write it saves the group (undo.py): a
  write that fails puts it back as it was, with a session for each member it brings back.

What the records hold: the group epoch and the topology epoch last configured ready (17), each
member's metadata (19), the assignment epoch (20), each member's target (21), each member's
current tasks (22) and the topology (23). A member tombstone removes the member (its timers
with it); the group epoch's tombstone deletes the group, which is then dead to a timer or a
request still holding it. Who holds which task is read off the members' current tasks each
time (StreamsGroup.holders), so nothing derived is kept up to date here.

What no record holds stays in memory, as in Kafka (streams_group.UnrecordedState): the topology
as configured against the topics (configured again at a load; a heartbeat's change keeps the
one its epoch bump was for), the endpoint information epoch, who asked for the application's
shutdown, and each member's reported task offsets. A change sets them as it works itself out and
they are set again once its records are stored; if the records are not, the group's stay as
before the change (a member keeps the task offsets it reported).
"""

from __future__ import annotations

import logging
from typing import Iterable, Iterator

from broker.coordinator.undo import UndoLog
from broker.groups import group_undo
from broker.groups.offsets_log import KeyValue
from broker.groups.offsets_store import StoredMarker, StoredRecord, applying
from broker.groups.streams import records as rec
from broker.groups.streams.coordinator import StreamsGroupCoordinator
from broker.groups.streams.reconciliation import CurrentTasks
from broker.groups.streams.streams_group import GroupSnapshot, StreamsGroup, StreamsMember

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


def replay_written(coordinator: StreamsGroupCoordinator, record: KeyValue, undo: UndoLog) -> None:
    group_id = rec.decode_key(record.key)[1]
    undo.save(("streams group", group_id), lambda: group_undo.saving(coordinator, group_id, GroupSnapshot))
    _apply(coordinator.groups, record)


def _apply(groups: dict[str, StreamsGroup], record: StoredRecord | KeyValue) -> str:
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
            group.dead = True  # a timer or a request still holding it finds it so
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
