"""Classic members of a consumer group (Kafka 4's mixed groups): JoinGroup, SyncGroup, Heartbeat
and LeaveGroup answered from the consumer group, as Kafka's classicGroupJoinToConsumerGroup and
its Sync/Heartbeat/Leave siblings.

- JoinGroup (protocol type "consumer"): the member's subscription is read from its first
  protocol's metadata (consumer_protocol.py); it becomes or updates a member like a heartbeat
  does (coordinator.update_member: group epoch, target, reconciliation, with the partitions its
  subscription says it owns) and is answered at once: generation = its member epoch, the
  protocol it listed first, and no leader role — the coordinator assigns. A new dynamic member
  of JoinGroup v4+ first gets MEMBER_ID_REQUIRED with its id.
- SyncGroup: at the member's epoch (ILLEGAL_GENERATION otherwise) it gets the partitions it is
  assigned now, as a ConsumerProtocolAssignment; REBALANCE_IN_PROGRESS while the group epoch
  is ahead of it and it has nothing left to revoke.
- Heartbeat: keeps its session; REBALANCE_IN_PROGRESS when it must rejoin to move on — the
  group epoch is ahead of it, it has partitions to revoke, or partitions it waits for are free.
- LeaveGroup: the members go as a heartbeat at epoch -1 takes them; a member of the new
  protocol named here is UNKNOWN_MEMBER_ID, as in Kafka.

Not done as Kafka does: a static classic member replacing another with the same instance id
(it joins as a new member), and the sync timeout (a member that never syncs is removed when
its session ends instead).
"""

from __future__ import annotations

import uuid

from wire.error_codes import ErrorCode
from broker.groups.join_messages import JoinRequest, JoinResult
from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember, MemberMetadata
from broker.groups.consumer.consumer_protocol import (
    BadConsumerProtocol, decode_subscription, encode_assignment, subscription_version,
)
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator, Refused
from broker.groups.consumer.reconciliation import MemberState

CONSUMER_PROTOCOL = "consumer"


async def join(cg: ConsumerGroupCoordinator, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
    not_here = cg.coordinator_error(group.group_id)
    if not_here:
        return JoinResult(not_here, req.member_id)
    lo, hi = cg.classic.session_timeout_range_ms  # group.min/max.session.timeout.ms, as a classic join
    if not lo <= req.session_timeout_ms <= hi:
        return JoinResult(ErrorCode.invalid_session_timeout, req.member_id)
    if req.protocol_type != CONSUMER_PROTOCOL or not req.protocols:
        return JoinResult(ErrorCode.inconsistent_group_protocol, req.member_id)
    member_id = req.member_id or str(uuid.uuid4())
    if not req.member_id and req.require_known_member and req.group_instance_id is None:
        return JoinResult(ErrorCode.member_id_required, member_id)  # before the subscription is read, as in Kafka
    try:
        subscription = decode_subscription(req.protocols[0][1])
    except BadConsumerProtocol:
        return JoinResult(ErrorCode.inconsistent_group_protocol, req.member_id)
    ids = {t.name: t.topic_id for t in cg.topics().values()}
    owned = tp.normal({ids[name]: ps for name, ps in subscription.owned.items() if name in ids})

    def apply(records: list) -> None:
        member = group.members.get(member_id)
        new = member is None
        if new:
            member = group.members[member_id] = ConsumerMember(member_id)
        elif member.metadata.classic is None:
            raise Refused(ErrorCode.unknown_member_id)  # a member of the new protocol: not through JoinGroup
        metadata = MemberMetadata(
            instance_id=req.group_instance_id, rack_id=subscription.rack_id, client_id=req.client_id,
            client_host=req.client_host, subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            classic=ClassicMetadata(req.session_timeout_ms, tuple(req.protocols)))
        cg.update_member(group, member, metadata, new, new, owned, records)

    code, _, _ = await cg.change(group, apply)
    if code is not ErrorCode.none:
        return JoinResult(code, req.member_id)
    member = group.members[member_id]  # as its records made it
    cg.arm_session(group, member)
    return JoinResult(ErrorCode.none, member_id, member.current.epoch, CONSUMER_PROTOCOL, req.protocols[0][0], "", [])


def _classic_member(group: ConsumerGroup, member_id: str, generation: int) -> tuple[ConsumerMember | None, ErrorCode]:
    member = group.members.get(member_id)
    if member is None or member.metadata.classic is None:
        return None, ErrorCode.unknown_member_id
    if generation != member.current.epoch:
        return member, ErrorCode.illegal_generation
    return member, ErrorCode.none


def sync(cg: ConsumerGroupCoordinator, group: ConsumerGroup, generation: int, member_id: str,
         protocol_type: str | None, protocol_name: str | None) -> tuple[ErrorCode, bytes]:
    not_here = cg.coordinator_error(group.group_id)
    if not_here:
        return not_here, b""
    member, code = _classic_member(group, member_id, generation)
    if code is not ErrorCode.none:
        return code, b""
    protocols = dict(member.metadata.classic.protocols)
    if protocol_type not in (None, CONSUMER_PROTOCOL) or (protocol_name is not None and protocol_name not in protocols):
        return ErrorCode.inconsistent_group_protocol, b""
    if group.epoch > member.current.epoch and member.current.state is not MemberState.UNREVOKED_PARTITIONS:
        return ErrorCode.rebalance_in_progress, b""
    cg.arm_session(group, member)
    names = {t.topic_id: t.name for t in group.topics.values()}
    assigned = {names[t]: ps for t, ps in member.current.assigned.items() if t in names}
    version = subscription_version(protocols[protocol_name] if protocol_name else next(iter(protocols.values())))
    return ErrorCode.none, encode_assignment(assigned, version)


def heartbeat(cg: ConsumerGroupCoordinator, group: ConsumerGroup, generation: int, member_id: str) -> ErrorCode:
    not_here = cg.coordinator_error(group.group_id)
    if not_here:
        return not_here
    member, code = _classic_member(group, member_id, generation)
    if code is not ErrorCode.none:
        return code
    cg.arm_session(group, member)
    state = member.current.state
    if (member.current.epoch < group.epoch or state is MemberState.UNREVOKED_PARTITIONS
            or (state is MemberState.UNRELEASED_PARTITIONS and not _waits_for_others(group, member))):
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none


async def leave(cg: ConsumerGroupCoordinator, group: ConsumerGroup,
                leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
    not_here = cg.coordinator_error(group.group_id)
    if not_here:
        return not_here, []
    codes: list[ErrorCode] = []

    def apply(records: list) -> None:
        for member_id, instance_id in leaving:
            member = group.member_by_instance(instance_id) if instance_id is not None else group.members.get(member_id)
            if member is None or member.metadata.classic is None:
                codes.append(ErrorCode.unknown_member_id)
            elif instance_id is not None and member_id and member.member_id != member_id:
                codes.append(ErrorCode.fenced_instance_id)
            else:
                cg.remove_member(group, member, records)
                codes.append(ErrorCode.none)

    code, _, _ = await cg.change(group, apply)
    return (code, []) if code is not ErrorCode.none else (ErrorCode.none, codes)


def _waits_for_others(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's waitingOnUnreleasedPartition: some partition of its target is still held by another."""
    target = group.targets.get(member.member_id, {})
    return any(group.owner_epoch(t, p) != -1 for t, p in tp.pairs(target)
               if p not in member.current.assigned.get(t, frozenset()))

