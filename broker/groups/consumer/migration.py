"""Kafka 4's online migration between the group protocols (GroupMetadataManager's
convertToConsumerGroup and convertToClassicGroup), as group.consumer.migration.policy allows
(`bidirectional`, Kafka's default; `upgrade`; `downgrade`; `disabled`).

- Upgrade: the first ConsumerGroupHeartbeat to a classic group of protocol type "consumer"
  with members turns it into a consumer group holding the same members. Each keeps its
  classic session and protocols (ClassicMetadata), is at member epoch = the classic generation
  with the partitions its classic assignment gave it, and that assignment is the target, so
  nothing moves until the new member's join bumps the group epoch; the classic members then
  learn of it from their next Heartbeat (REBALANCE_IN_PROGRESS) and rejoin through JoinGroup
  (classic_members.py). Parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS.
- Downgrade: when the last member of the new protocol leaves (or its session ends) and classic
  members remain, the group becomes classic again: generation = the group epoch, each member
  with its protocols and its current assignment, then a rebalance, as Kafka's prepareRebalance.

The records of a conversion are one batch. Its consumer group records are replayed into the
consumer groups as any change's are (replay.py: put back if the write fails); the classic
group changes once the batch is stored (the classic coordinator's records are its own). A
classic group whose offsets stay is written as an empty classic group record, not a tombstone:
a replay forgets a tombstoned group with its offsets, and these offsets stay the group's.
"""

from __future__ import annotations

import logging

from wire.error_codes import ErrorCode
from broker.groups import offsets_log
from broker.groups.group import Group, Member
from broker.groups.state import GroupState
from broker.groups.consumer import records as rec
from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember, MemberMetadata
from broker.groups.consumer.consumer_protocol import (
    BadConsumerProtocol, decode_assignment, decode_subscription, encode_assignment, subscription_version,
)
from broker.groups.consumer.reconciliation import CurrentAssignment, MemberState

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL = "consumer"


def may_upgrade(settings, classic: Group) -> bool:
    return (settings.migration_policy in ("bidirectional", "upgrade") and classic.protocol_type == CONSUMER_PROTOCOL
            and classic.state is not GroupState.DEAD)


async def upgrade(cg, classic: Group) -> ErrorCode:
    """The classic group becomes a consumer group; ErrorCode.none or the error the heartbeat gets."""
    group_id = classic.group_id
    if group_id in cg.upgrading:
        return ErrorCode.coordinator_load_in_progress  # another heartbeat is converting it: try again
    topics = {t.name: t for t in cg.topics().values()}
    group = ConsumerGroup(group_id, epoch=classic.generation, assignment_epoch=classic.generation)
    try:
        for m in classic.members.values():
            member = _from_classic(m, classic, topics)
            group.members[member.member_id] = member
            group.targets[member.member_id] = member.current.assigned
            group.set_current(member, member.current)
    except BadConsumerProtocol as exc:
        log.warning("group %s: cannot upgrade, a member's consumer protocol is unreadable: %s", group_id, exc)
        return ErrorCode.group_id_not_found
    group.topics = cg.resolve(group)
    cg.upgrading.add(group_id)
    try:
        records = [_empty_classic_record(classic, cg.classic.timers.now_ms())] + _consumer_group_records(group)
        written = await cg.store.writes.write(group_id, records)
    finally:
        cg.upgrading.discard(group_id)
    if written is not ErrorCode.none:
        log.info("group %s: upgrading to a consumer group failed: %s", group_id, written.name)
        return written
    group = cg.groups[group_id]  # as its records made it (replay.py)
    log.info("group %s: classic group of %d members upgraded to a consumer group at epoch %d",
             group_id, len(group.members), group.epoch)
    cg.classic.release(classic)
    for member in group.members.values():
        cg.arm_session(group, member)
    return ErrorCode.none


async def maybe_downgrade(cg, group: ConsumerGroup) -> None:
    """After a member of the new protocol left: the group becomes classic if only classic members remain."""
    async with group.lock:
        members = list(group.members.values())
        if (cg.groups.get(group.group_id) is not group or not members or any(m.metadata.classic is None for m in members)
                or cg.settings.migration_policy not in ("bidirectional", "downgrade")):
            return
        names = {t.topic_id: t.name for t in group.topics.values()}
        now = cg.classic.timers.now_ms()
        holder = cg.classic.groups.get(group.group_id) or Group(group.group_id, state_timestamp=now)
        # The generation is the epoch the members reconciled to, not the leave's bump, which no
        # classic member saw: a member at it goes on to rejoin instead of ILLEGAL_GENERATION.
        classic = Group(group.group_id, state=GroupState.STABLE, generation=group.assignment_epoch,
                        protocol_type=CONSUMER_PROTOCOL, state_timestamp=now)
        classic.members = {m.member_id: _to_classic(m, names) for m in members}
        try:
            classic.protocol_name = classic.select_protocol()
        except StopIteration:
            log.info("group %s: stays a consumer group, its classic members share no protocol", group.group_id)
            return
        classic.leader_id = members[0].member_id
        records = [(rec.key(t, group.group_id, m.member_id), None) for m in members
                   for t in (rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA)] + cg.tombstones(group)
        records.append((offsets_log.group_key(group.group_id),
                        offsets_log.group_value(offsets_log.group_record(classic))))
        written = await cg.store.writes.write(group.group_id, records)
        if written is not ErrorCode.none:
            log.info("group %s: downgrading to a classic group failed: %s", group.group_id, written.name)
            return
        log.info("group %s: the last consumer-protocol member left; classic again at generation %d",
                 group.group_id, classic.generation)
        cg.unload(group)
        for attr in ("state", "generation", "protocol_type", "protocol_name", "leader_id", "members",
                     "state_timestamp"):
            setattr(holder, attr, getattr(classic, attr))
        cg.classic.groups[group.group_id] = holder
        cg.classic.adopt(holder)


def _from_classic(m: Member, classic: Group, topics: dict) -> ConsumerMember:
    subscription = decode_subscription(m.metadata_for(classic.protocol_name))
    assigned = {topics[name].topic_id: ps for name, ps in decode_assignment(m.assignment).items() if name in topics}
    metadata = MemberMetadata(instance_id=m.group_instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
                              client_host=m.client_host, subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                              rebalance_timeout_ms=m.rebalance_timeout_ms,
                              classic=ClassicMetadata(m.session_timeout_ms, tuple(m.protocols)))
    current = CurrentAssignment(MemberState.STABLE, classic.generation, classic.generation, tp.normal(assigned))
    return ConsumerMember(m.member_id, metadata, current)


def _to_classic(m: ConsumerMember, names: dict) -> Member:
    classic = m.metadata.classic
    version = max((subscription_version(metadata) for _, metadata in classic.protocols), default=0)
    assigned = {names[t]: ps for t, ps in m.current.assigned.items() if t in names}
    return Member(m.member_id, m.metadata.instance_id, m.metadata.client_id, m.metadata.client_host,
                  classic.session_timeout_ms, m.metadata.rebalance_timeout_ms, CONSUMER_PROTOCOL,
                  list(classic.protocols), assignment=encode_assignment(assigned, version))



def _empty_classic_record(classic: Group, now_ms: int) -> tuple[bytes, bytes]:
    empty = Group(classic.group_id, generation=classic.generation, protocol_type=CONSUMER_PROTOCOL,
                  state_timestamp=now_ms)
    return offsets_log.group_key(classic.group_id), offsets_log.group_value(offsets_log.group_record(empty))


def _consumer_group_records(group: ConsumerGroup) -> list[tuple[bytes, bytes]]:
    """A whole consumer group in Kafka's order (ConsumerGroup.createConsumerGroupRecords)."""
    gid, members = group.group_id, list(group.members.values())
    out = [(rec.key(rec.MEMBER_METADATA, gid, m.member_id), rec.member_metadata_value(m.metadata)) for m in members]
    out.append((rec.key(rec.GROUP_METADATA, gid), rec.epoch_value(group.epoch)))
    out.append((rec.key(rec.PARTITION_METADATA, gid), rec.partition_metadata_value(list(group.topics.values()))))
    out += [(rec.key(rec.TARGET_MEMBER, gid, m.member_id), rec.target_member_value(group.targets[m.member_id]))
            for m in members]
    out.append((rec.key(rec.TARGET_METADATA, gid), rec.epoch_value(group.assignment_epoch)))
    out += [(rec.key(rec.CURRENT_ASSIGNMENT, gid, m.member_id), rec.current_assignment_value(m.current))
            for m in members]
    return out
