"""Which share group records a change writes: the group as Kafka's records (what each says) after
the change, compared with the group before it, which is what the log holds (a group changes only
by its records' replay: share_group_replay.py), as records that bring the log up to the change.

A record is written when what it says changed, which is when Kafka's GroupMetadataManager writes
it: a member that joins or changes its subscription, rack or client (type 10), a group epoch
bump (11), a member whose target moved (13) after a new assignment (12), a member whose epoch
or assignment moved (14), a share-partition assigned for the first time (15). A member that
leaves or is fenced has its three records tombstoned (14, 13, 10) in the batch that bumps the
group epoch; a deleted group has all of its records tombstoned, the group epoch's last (its
replay is what deletes the group, so nothing after it may bring the group back).

A write that fails with nothing appended leaves the group as it was (the runtime puts it back), so
the change is worked out anew when asked again; a crash between two writes leaves the log at the
first, each record whole.
"""

from __future__ import annotations

from broker.groups.share import share_group_records as rec
from broker.groups.share.share_group import ShareGroup

RecordKey = tuple[int, str | None]  # (record type, member id or None)
Said = dict[RecordKey, object]  # what each record of the group says
GROUP_RECORDS = ((rec.GROUP_METADATA, None), (rec.TARGET_METADATA, None), (rec.STATE_PARTITION_METADATA, None))

# Kafka's order within one change's batch: a leaving member's tombstones (each member's in this
# order), the records of the change, then (deleting the group) its own tombstones.
_UPSERTS = (rec.MEMBER_METADATA, rec.GROUP_METADATA, rec.TARGET_MEMBER, rec.TARGET_METADATA,
            rec.CURRENT_ASSIGNMENT, rec.STATE_PARTITION_METADATA)
_TOMBSTONES = (rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA, rec.TARGET_METADATA,
               rec.STATE_PARTITION_METADATA, rec.GROUP_METADATA)


def said_by(group: ShareGroup) -> Said:
    """The group's records as they are now. Assignments are taken as they are, not copied: the
    group replaces one that changes, never alters it, so an unchanged one is the same object and
    compares at once (a heartbeat of a 1,000-member group compares them all)."""
    said: Said = {(rec.GROUP_METADATA, None): (group.epoch, group.metadata_hash),
                  (rec.STATE_PARTITION_METADATA, None): dict(group.state_partitions)}
    if group.assignment_epoch:  # written once an assignment is computed
        said[(rec.TARGET_METADATA, None)] = group.assignment_epoch
    for member_id, m in group.members.items():
        said[(rec.MEMBER_METADATA, member_id)] = rec.MemberMetadata(m.rack_id, m.client_id, m.client_host,
                                                                    m.subscribed)
        said[(rec.CURRENT_ASSIGNMENT, member_id)] = (m.epoch, m.previous_epoch, m.assignment)
    for member_id, target in group.targets.items():
        said[(rec.TARGET_MEMBER, member_id)] = target
    return said


def records_between(group_id: str, held: Said, wanted: Said, now_ms: int) -> list[tuple[bytes, bytes | None]]:
    """The records (key, value or None for a tombstone) that take the log from `held` to `wanted`."""
    gone = [k for k in held if k not in wanted]
    members_gone = sorted((k for k in gone if k[1] is not None), key=lambda k: (k[1], _TOMBSTONES.index(k[0])))
    group_gone = sorted((k for k in gone if k[1] is None), key=lambda k: _TOMBSTONES.index(k[0]))
    changed = sorted((k for k, said in wanted.items() if k not in held or (held[k] is not said and held[k] != said)),
                     key=lambda k: (_UPSERTS.index(k[0]), k[1] or ""))
    return ([(rec.key(t, group_id, m), None) for t, m in members_gone]
            + [(rec.key(t, group_id, m), _value(t, wanted[(t, m)], now_ms)) for t, m in changed]
            + [(rec.key(t, group_id, m), None) for t, m in group_gone])


def _value(record_type: int, said, now_ms: int) -> bytes:
    if record_type == rec.MEMBER_METADATA:
        return rec.member_metadata_value(said)
    if record_type == rec.GROUP_METADATA:
        return rec.group_metadata_value(*said)
    if record_type == rec.TARGET_METADATA:
        return rec.target_metadata_value(said)
    if record_type == rec.TARGET_MEMBER:
        return rec.target_member_value(said)
    if record_type == rec.CURRENT_ASSIGNMENT:
        return rec.current_assignment_value(*said)
    return rec.state_partitions_value(said, now_ms)
