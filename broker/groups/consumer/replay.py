"""Consumer groups from their records in `__consumer_offsets` (types 3-8), in log order: the
only way a group changes, as in Kafka's GroupMetadataManager.replay.

- `replaying` sits in the stream of records a load reads (group_loading.py): it applies the
  consumer group records as they pass, hands the others (offsets, classic groups, and the
  transaction markers that end TxnOffsetCommit's pending offsets) on to offsets_replay.load,
  and once the stream ends derives what the records do not hold: which member holds each
  partition, and a fresh session for every member (a member that does not heartbeat to the
  new coordinator within its session is removed, as in Kafka).
- `replay_written` applies a record the coordinator's change returned (coordinator.py works
  its change out and puts the group back; the runtime replays the records here before it
  writes them), keeping who holds what as it goes. Before a group's first record since the
  last write it saves the group (undo.py): a write that fails puts it back as it was, with a
  session for each member it brings back.
"""

from __future__ import annotations

import logging
from typing import Iterable, Iterator

from broker.coordinator.undo import UndoLog
from broker.groups import group_undo
from broker.groups.offsets_log import KeyValue
from broker.groups.offsets_store import StoredMarker, StoredRecord, applying
from broker.groups.consumer import records as rec
from broker.groups.consumer.consumer_group import ConsumerGroup, ConsumerMember
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from broker.groups.consumer.group_snapshot import GroupSnapshot
from broker.groups.consumer.reconciliation import CurrentAssignment

log = logging.getLogger(__name__)


def replaying(coordinator: ConsumerGroupCoordinator,
              records: Iterable[StoredRecord | StoredMarker]) -> Iterator[StoredRecord | StoredMarker]:
    touched: set[str] = set()
    yield from applying(records, lambda key: rec.key_type(key) in rec.TYPES,
                        lambda record: touched.add(_apply(coordinator, record)), "consumer group")
    for group_id in touched:
        group = coordinator.groups.get(group_id)
        if group is None:
            continue
        group.holders = {}
        for member in group.members.values():
            group.set_current(member, member.current)
            coordinator.arm_session(group, member)
    if touched:
        log.info("loaded %d consumer groups", sum(1 for g in touched if g in coordinator.groups))


def replay_written(coordinator: ConsumerGroupCoordinator, record: KeyValue, undo: UndoLog) -> None:
    group_id = rec.decode_key(record.key)[1]
    undo.save(("consumer group", group_id), lambda: group_undo.saving(coordinator, group_id, GroupSnapshot))
    _apply(coordinator, record)


def _apply(coordinator: ConsumerGroupCoordinator, record: StoredRecord | KeyValue) -> str:
    record_type, group_id, member_id = rec.decode_key(record.key)
    value = record.value
    groups = coordinator.groups
    if record_type == rec.GROUP_METADATA and value is None:
        deleted = groups.pop(group_id, None)  # the group was deleted
        if deleted is not None:
            deleted.dead = True  # a timer or a request still holding it finds it so
        return group_id
    group = groups.get(group_id)
    if group is None:
        group = groups[group_id] = ConsumerGroup(group_id)
    if record_type == rec.GROUP_METADATA:
        group.epoch = rec.decode_epoch(value)
    elif record_type == rec.PARTITION_METADATA:
        group.topics = {} if value is None else {t.topic_id: t for t in rec.decode_partition_metadata(value)}
    elif record_type == rec.TARGET_METADATA:
        group.assignment_epoch = 0 if value is None else rec.decode_epoch(value)
    elif record_type == rec.TARGET_MEMBER:
        if value is None:
            group.targets.pop(member_id, None)
        else:
            group.targets[member_id] = rec.decode_target_member(value)
    elif value is None:
        member = group.members.get(member_id)
        if member is None:
            pass
        elif record_type == rec.MEMBER_METADATA:
            group.remove(member)
        else:
            group.set_current(member, CurrentAssignment())
    else:
        member = group.members.get(member_id)
        if member is None:
            member = group.members[member_id] = ConsumerMember(member_id)
        if record_type == rec.MEMBER_METADATA:
            member.metadata = rec.decode_member_metadata(value)
        else:
            group.set_current(member, rec.decode_current_assignment(value))
    return group_id
