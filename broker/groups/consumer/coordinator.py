"""The KIP-848 consumer group coordinator: ConsumerGroupHeartbeat, sessions, and what the log keeps.

Every heartbeat runs under its group's lock: it updates the member (joining at epoch 0,
leaving at -1, a static member stepping out at -2), bumps the group epoch when what the
assignor sees changed (members, subscriptions, the subscribed topics' partitions: resolved
again at every heartbeat, so a topic created later that matches a regex is picked up by the
next one), computes a new target when the group epoch is ahead of the assignment's, and
reconciles the member (reconciliation.py). The change is worked out on the group, then the
group is put back as it was: what changed is one batch of Kafka's records (records.py), which
the coordinator runtime replays into the group (replay.py) in its `__consumer_offsets`
partition's turn and writes there (group_writes.py), as Kafka's coordinator replays the records
of a consumer group. The answer waits until that batch is stored as a commit is (on every
in-sync replica); if it is not, the runtime puts the group back as the log holds it and the
member gets the runtime's coordinator error, so nothing a member was told is missing after a
restart or failover, and what the group holds is what its records say.

A member that stops heartbeating for group.consumer.session.timeout.ms is removed; one that
does not revoke within its rebalance timeout too. Which broker coordinates a group, and
unloading groups whose `__consumer_offsets` partition moved away, are the classic
coordinator's (`coordinator_error`, group_loading.py); committed offsets are kept in the
classic group object of the same id (offsets.py), whatever the group's protocol.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from wire.error_codes import ErrorCode
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import OffsetsStore
from broker.groups.consumer import migration
from broker.groups.consumer import records as rec
from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.assignor_spec import MemberSpec
from broker.groups.consumer.consumer_group import (
    LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerMember, MemberMetadata, SubscribedTopic,
)
from broker.groups.consumer.group_snapshot import GroupSnapshot
from broker.groups.consumer.heartbeat_request import HeartbeatRequest, InvalidHeartbeat, check
from broker.groups.consumer.reconciliation import CurrentAssignment, Fenced, MemberState, reconcile
from broker.groups.consumer.target_assignment import compute, preferred_assignor
from broker.groups.consumer.topic_partitions import Assignment
from broker.settings.consumer_group_options import ConsumerGroupSettings

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged, not sent


class Refused(Exception):
    """A change the coordinator refuses: the member gets `error` and the group stays as it was."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error, self.message = error, message


class ConsumerGroupCoordinator:
    def __init__(self, classic: GroupCoordinator, store: OffsetsStore, topics, settings: ConsumerGroupSettings) -> None:
        """`topics()`: the broker's topics by name (broker.topics.topics)."""
        self.groups: dict[str, ConsumerGroup] = {}
        self.classic = classic
        self.store = store
        self.topics = topics
        self.settings = settings
        self.upgrading: set[str] = set()  # classic groups being converted (migration.py)

    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        return self.classic.coordinator_error(group_id)

    # --- the heartbeat ----------------------------------------------------------------------

    async def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        try:
            check(req, self.settings.assignors)
        except InvalidHeartbeat as exc:
            return HeartbeatResult(exc.error, exc.message)
        not_here = self.coordinator_error(req.group_id)
        if not_here:
            return HeartbeatResult(not_here)
        classic = self.classic.groups.get(req.group_id)
        if classic is not None and classic.members:
            if req.member_epoch != 0 or not migration.may_upgrade(self.settings, classic):
                return HeartbeatResult(ErrorCode.group_id_not_found, f"Group {req.group_id} is not a consumer group.")
            written = await migration.upgrade(self, classic)  # the first member of the new protocol
            if written is not ErrorCode.none:
                return HeartbeatResult(written)
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_epoch != 0:
                return HeartbeatResult(ErrorCode.unknown_member_id, f"Group {req.group_id} has no member {req.member_id}.")
            group = self.groups[req.group_id] = ConsumerGroup(req.group_id)
        code, message, result = await self.change(group, lambda records: self._apply(group, req, records))
        if code is not ErrorCode.none:
            return HeartbeatResult(code, message)
        if req.member_epoch == LEAVE_EPOCH:
            await migration.maybe_downgrade(self, group)  # the last member of the new protocol may be gone
        member = group.members.get(result.member_id or "")
        if member is not None and result.member_epoch >= 0:
            self.arm_session(group, member)
            self._arm_revocation(group, member)
        return result

    async def change(self, group: ConsumerGroup, apply: Callable[[list], T]) -> tuple[ErrorCode, str | None, T | None]:
        """(error, message, what `apply(records)` returned): `apply` works a change out on the
        group under its lock and lists the records saying so; the group is put back, and the
        records, replayed into it, are stored before anyone is answered."""
        async with group.lock:
            if self.groups.get(group.group_id) is not group:
                return ErrorCode.not_coordinator, None, None  # unloaded while this request waited
            saved, records = GroupSnapshot(group), []
            try:
                result = apply(records)
            except Refused as exc:
                saved.restore(group)
                self._forget_if_new(group)
                return exc.error, exc.message, None
            saved.restore(group)  # the records say what changed: replayed into it (replay.py)
            stored = await self.store.writes.write(group.group_id, records)
            if stored is not ErrorCode.none:  # the runtime put the group back as the log holds it
                self.rearm(group)
                self._forget_if_new(group)
                return stored, None, None
            return ErrorCode.none, None, result

    def _apply(self, group: ConsumerGroup, req: HeartbeatRequest, records: list) -> HeartbeatResult:
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, req, records)
        member, new, bump = self._member_for(group, req, records)
        if member.metadata.classic is not None:
            raise Refused(ErrorCode.unknown_member_id, f"Member {member.member_id} uses the classic protocol.")
        before = member.current
        current = self.update_member(group, member, _updated(member.metadata, req), new, bump, req.owned, records)
        send = req.member_epoch == 0 or req.is_full or current.assigned != before.assigned
        return HeartbeatResult(member_id=member.member_id, member_epoch=current.epoch,
                               heartbeat_interval_ms=self.settings.heartbeat_interval_ms,
                               assignment=tp.normal(current.assigned) if send else None)

    def update_member(self, group: ConsumerGroup, member: ConsumerMember, metadata: MemberMetadata, new: bool,
                      bump: bool, owned: Assignment | None, records: list) -> CurrentAssignment:
        """A member's heartbeat or classic join: its metadata, then the group epoch and the target
        if what the assignor sees moved, then the member's step toward its target."""
        subscription_changed = _subscription(metadata) != _subscription(member.metadata)
        if new or metadata != member.metadata:
            bump = bump or subscription_changed or metadata.server_assignor != member.metadata.server_assignor
            member.metadata = metadata
            records.append((rec.key(rec.MEMBER_METADATA, group.group_id, member.member_id),
                            rec.member_metadata_value(metadata)))
        self._refresh_topics(group, records, bump)
        self._maybe_assign(group, records)
        before = member.current
        try:
            current = reconcile(before, target_epoch=group.assignment_epoch,
                                target=group.targets.get(member.member_id, {}),
                                subscribed=group.subscribed_ids(member), owner_epoch=group.owner_epoch,
                                owned=owned, subscription_changed=subscription_changed)
        except Fenced as exc:
            raise Refused(ErrorCode.fenced_member_epoch, str(exc)) from None
        if current != before:
            group.set_current(member, current)
            records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                            rec.current_assignment_value(current)))
        return current

    def _member_for(self, group: ConsumerGroup, req: HeartbeatRequest,
                    records: list) -> tuple[ConsumerMember, bool, bool]:
        """(member, whether it is new to the group, whether that alone moves the group epoch)."""
        if req.member_epoch == 0:
            if req.instance_id is not None:
                return self._static_join(group, req, records)
            member = group.members.get(req.member_id) if req.member_id else None
            if member is None:
                member_id = req.member_id or str(uuid.uuid4())  # v0: the coordinator names members
                member = group.members[member_id] = ConsumerMember(member_id)
                return member, True, True
            if member.current.state is MemberState.UNKNOWN:  # rejoining from nothing, as it must
                group.set_current(member, CurrentAssignment())
                records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                                rec.current_assignment_value(member.current)))
            return member, False, False  # its join answer was lost: it keeps what it has
        member = group.members.get(req.member_id)
        if member is None:
            raise Refused(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {group.group_id}.")
        _check_epoch(member, req)
        return member, False, False

    def _static_join(self, group: ConsumerGroup, req: HeartbeatRequest,
                     records: list) -> tuple[ConsumerMember, bool, bool]:
        existing = group.member_by_instance(req.instance_id)
        member_id = req.member_id or str(uuid.uuid4())
        if existing is not None and existing.member_id == member_id:
            return existing, False, False
        if existing is None:
            member = group.members[member_id] = ConsumerMember(member_id)
            return member, True, True
        if existing.current.epoch != STATIC_LEAVE_EPOCH:
            raise Refused(ErrorCode.unreleased_instance_id, f"Static member {existing.member_id} with instance id "
                           f"{req.instance_id} is present in the consumer group {group.group_id}.")
        # The instance comes back under a new member id: it takes over its old self's
        # assignment and target, and the group epoch stays (the assignor sees the same group).
        target, assigned = group.targets.get(existing.member_id, {}), existing.current.assigned
        self._drop_member_records(group, existing, records)
        group.remove(existing)
        member = group.members[member_id] = ConsumerMember(member_id, existing.metadata)
        group.targets[member_id] = target
        records.append((rec.key(rec.TARGET_MEMBER, group.group_id, member_id), rec.target_member_value(target)))
        group.set_current(member, CurrentAssignment(assigned=assigned))
        return member, True, False

    def _leave(self, group: ConsumerGroup, req: HeartbeatRequest, records: list) -> HeartbeatResult:
        member = group.members.get(req.member_id)
        if member is None and req.member_epoch == STATIC_LEAVE_EPOCH:
            member = group.member_by_instance(req.instance_id)
        if member is None:
            raise Refused(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {group.group_id}.")
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # It will be back: its partitions stay its own until then or until its session ends.
            current = replace(member.current, epoch=STATIC_LEAVE_EPOCH)
            group.set_current(member, current)
            records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                            rec.current_assignment_value(current)))
            return HeartbeatResult(member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH)
        log.info("group %s: member %s left", group.group_id, member.member_id)
        self.remove_member(group, member, records)
        return HeartbeatResult(member_id=member.member_id, member_epoch=LEAVE_EPOCH)

    # --- the group epoch and the target ----------------------------------------------------------

    def remove_member(self, group: ConsumerGroup, member: ConsumerMember, records: list) -> None:
        self._drop_member_records(group, member, records)
        group.remove(member)
        self._refresh_topics(group, records, bump=True)

    @staticmethod
    def _drop_member_records(group: ConsumerGroup, member: ConsumerMember, records: list) -> None:
        for record_type in (rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA):
            records.append((rec.key(record_type, group.group_id, member.member_id), None))

    def resolve(self, group: ConsumerGroup) -> dict[uuid.UUID, SubscribedTopic]:
        """The topics some member subscribes to, as they are now."""
        out = {}
        for topic in list(self.topics().values()):
            if any(m.subscribes_to(topic.name) for m in group.members.values()):
                out[topic.topic_id] = SubscribedTopic(topic.topic_id, topic.name, len(topic.partitions))
        return out

    def _refresh_topics(self, group: ConsumerGroup, records: list, bump: bool) -> None:
        topics = self.resolve(group)
        if topics != group.topics:
            group.topics = topics
            records.append((rec.key(rec.PARTITION_METADATA, group.group_id),
                            rec.partition_metadata_value(list(topics.values()))))
            bump = True
        if bump:
            group.epoch += 1
            records.append((rec.key(rec.GROUP_METADATA, group.group_id), rec.epoch_value(group.epoch)))

    def _maybe_assign(self, group: ConsumerGroup, records: list) -> None:
        if group.epoch <= group.assignment_epoch:
            return
        assignor = preferred_assignor(self.settings.assignors,
                                      (m.metadata.server_assignor for m in group.members.values()))
        specs = {mid: MemberSpec(group.subscribed_ids(m), group.targets.get(mid, {}), m.metadata.instance_id)
                 for mid, m in group.members.items()}
        counts = {t.topic_id: t.partitions for t in group.topics.values()}
        targets = {mid: tp.normal(a) for mid, a in compute(assignor, specs, counts).items()}
        for mid, target in targets.items():
            if target != tp.normal(group.targets.get(mid, {})):
                records.append((rec.key(rec.TARGET_MEMBER, group.group_id, mid), rec.target_member_value(target)))
        group.targets = targets
        group.assignment_epoch = group.epoch
        records.append((rec.key(rec.TARGET_METADATA, group.group_id), rec.epoch_value(group.assignment_epoch)))
        log.info("group %s: epoch %d, %s assignment of %d partitions to %d members", group.group_id,
                 group.epoch, assignor, sum(counts.values()), len(targets))

    # --- timers --------------------------------------------------------------------------------

    def arm_session(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        if member.expiry is not None:
            member.expiry.cancel()
        classic = member.metadata.classic  # a classic member keeps the session it joined with
        member.expiry = self.classic.timers.schedule(
            group.group_id, classic.session_timeout_ms if classic else self.settings.session_timeout_ms,
            lambda: self._expire(group, member, "session timed out", None), "session")

    def _arm_revocation(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A member asked to revoke has its rebalance timeout to do it, as in Kafka."""
        if member.current.state is not MemberState.UNREVOKED_PARTITIONS:
            if member.revocation_deadline is not None:
                member.revocation_deadline.cancel()
                member.revocation_deadline = None
            return
        if member.revocation_deadline is None:
            epoch = member.current.epoch
            member.revocation_deadline = self.classic.timers.schedule(
                group.group_id, member.metadata.rebalance_timeout_ms,
                lambda: self._expire(group, member, "did not revoke in time", epoch), "revocation")

    def rearm(self, group: ConsumerGroup) -> None:
        """A session for each member without one (one a failed change put back)."""
        for member in group.members.values():
            if member.expiry is None:
                self.arm_session(group, member)

    async def _expire(self, group: ConsumerGroup, member: ConsumerMember, why: str, revoking_at: int | None) -> None:
        async with group.lock:
            if self.groups.get(group.group_id) is not group or group.members.get(member.member_id) is not member:
                return
            if revoking_at is not None:
                member.revocation_deadline = None
                if member.current.state is not MemberState.UNREVOKED_PARTITIONS or member.current.epoch != revoking_at:
                    return
            else:
                member.expiry = None
            log.info("group %s: removing member %s: %s", group.group_id, member.member_id, why)
            saved, records = GroupSnapshot(group), []
            self.remove_member(group, member, records)
            saved.restore(group)  # the records say what changed: replayed into it (replay.py)
            stored = await self.store.writes.write(group.group_id, records)
            if stored is not ErrorCode.none:
                log.info("group %s: removing member %s failed: %s", group.group_id, member.member_id, stored.name)
                self.rearm(group)  # tried again at the next session timeout
                return
        if member.metadata.classic is None:
            await migration.maybe_downgrade(self, group)

    # --- unloading, deleting -----------------------------------------------------------------------

    def _forget_if_new(self, group: ConsumerGroup) -> None:
        """A group this failed request created, and nothing stored: it never existed."""
        if not group.members and group.epoch == 0 and self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    def unload(self, group: ConsumerGroup) -> None:
        """Another broker coordinates it now: forget it; its records stay in the log."""
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        group.dead = True
        for member in group.members.values():
            member.cancel_timers()

    def tombstones(self, group: ConsumerGroup) -> list[tuple[bytes, None]]:
        """The records deleting an empty group, as Kafka's DeleteGroups writes them."""
        return [(rec.key(t, group.group_id), None)
                for t in (rec.TARGET_METADATA, rec.PARTITION_METADATA, rec.GROUP_METADATA)]


def _check_epoch(member: ConsumerMember, req: HeartbeatRequest) -> None:
    """Kafka's throwIfMemberEpochIsInvalid: the member's epoch, or the one before it if the
    answer that moved it on was lost and the member holds no more than it is assigned now."""
    epoch = member.current.epoch
    if req.member_epoch > epoch:
        raise Refused(ErrorCode.fenced_member_epoch, f"The consumer group member has a greater member epoch "
                       f"({req.member_epoch}) than the one known by the group coordinator ({epoch}). "
                       "The member must abandon all its partitions and rejoin.")
    if req.member_epoch < epoch and not (req.member_epoch == member.current.previous_epoch and req.owned is not None
                                         and tp.is_subset(req.owned, member.current.assigned)):
        raise Refused(ErrorCode.fenced_member_epoch, f"The consumer group member has a smaller member epoch "
                       f"({req.member_epoch}) than the one known by the group coordinator ({epoch}). "
                       "The member must abandon all its partitions and rejoin.")


def _updated(m: MemberMetadata, req: HeartbeatRequest) -> MemberMetadata:
    """The member's metadata with what this heartbeat changed (null fields: unchanged)."""
    names = m.subscribed_topic_names if req.subscribed_topic_names is None else tuple(sorted(set(req.subscribed_topic_names)))
    regex = m.subscribed_topic_regex if req.subscribed_topic_regex is None else (req.subscribed_topic_regex or None)
    return MemberMetadata(
        instance_id=m.instance_id if req.instance_id is None else req.instance_id,
        rack_id=m.rack_id if req.rack_id is None else req.rack_id,
        client_id=req.client_id, client_host=req.client_host, subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        rebalance_timeout_ms=m.rebalance_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms,
        server_assignor=m.server_assignor if req.server_assignor is None else req.server_assignor)


def _subscription(m: MemberMetadata) -> tuple:
    return m.subscribed_topic_names, m.subscribed_topic_regex
