"""The KIP-1071 streams group coordinator: StreamsGroupHeartbeat, sessions, and the target.

Every heartbeat runs under its group's lock, in the steps of Kafka's
GroupMetadataManager.streamsGroupHeartbeat: the member (joining at epoch 0, leaving at -1),
the topology (the first member's initializes it), the topology configured against the topics
as they are now (topology.py: statuses, tasks per subtopology, internal topics to create),
the group epoch bumped when any of that changed, a new target (sticky_assignor.py) when the
group epoch is ahead of the assignment's, and the member's step toward its target
(reconciliation.py). Internal topics the topology needs are created by the caller
(handlers/streams_group_heartbeat.py) from what the heartbeat returns, as Kafka's KafkaApis
does; the next heartbeat finds them and the group becomes ready.

Every change is worked out on the group, then the group is put back as it was: what changed is
records of Kafka's streams group types (records.py), which the coordinator runtime replays into
the group (replay.py) in its `__consumer_offsets` partition's turn and writes there
(group_writes.py), as Kafka's coordinator replays a streams group's records. What no record
holds (the configured topology, the endpoint information epoch, the shutdown request, the
members' task offsets: replay.py) is set again as the change left it once its records are
stored. The answer waits until they are stored as a commit is; if they are not, the runtime puts
the group back as the log holds it and the member gets the runtime's coordinator error, so what
a member was told survives a restart or a coordinator move (replay.py loads it back), and what
the group holds is what its records say.

A member that stops heartbeating for group.streams.session.timeout.ms is removed, one that
does not revoke within its rebalance timeout too. Which broker coordinates a group is the
classic coordinator's answer (`coordinator_error`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from wire.error_codes import ErrorCode
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import OffsetsStore
from broker.groups.consumer.reconciliation import MemberState
from broker.groups.streams import records as rec
from broker.groups.streams import sticky_assignor
from broker.groups.streams.heartbeat_request import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, StreamsHeartbeat
from broker.groups.streams.member_checks import Refused, check_epoch, check_owned, check_static, updated
from broker.groups.streams.reconciliation import CurrentTasks, Fenced, reconcile
from broker.groups.streams.streams_group import GroupSnapshot, StreamsGroup, StreamsMember, UnrecordedState
from broker.groups.streams.tasks import Tasks
from broker.groups.streams.topology import (
    SHUTDOWN_APPLICATION, STALE_TOPOLOGY, ConfiguredTopology, InvalidTopology, TopicInfo, configure, task_partitions,
)
from broker.settings.streams_group_options import StreamsGroupSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamsHeartbeatResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    tasks: Tasks | None = None  # None: unchanged, not sent
    statuses: tuple[tuple[int, str], ...] = ()
    endpoint_epoch: int = 0
    endpoints: tuple | None = None  # ((host, port), active and standby {topic: partitions}) per member with one
    to_create: tuple[TopicInfo, ...] = field(default=())


class StreamsGroupCoordinator:
    def __init__(self, classic: GroupCoordinator, store: OffsetsStore, topics, other_kind,
                 settings: StreamsGroupSettings) -> None:
        """`topics()`: the broker's topics by name; `other_kind(group_id)`: the kind of another
        group holding that id ("consumer", "classic", "share") or None."""
        self.groups: dict[str, StreamsGroup] = {}
        self.classic = classic
        self.store = store
        self.topics = topics
        self.other_kind = other_kind
        self.settings = settings

    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        return self.classic.coordinator_error(group_id)

    async def heartbeat(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        not_here = self.coordinator_error(req.group_id)
        if not_here:
            return StreamsHeartbeatResult(not_here)
        if self.other_kind(req.group_id) is not None:
            return StreamsHeartbeatResult(ErrorCode.group_id_not_found, f"Group {req.group_id} is not a streams group.")
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_epoch != 0:
                return StreamsHeartbeatResult(ErrorCode.group_id_not_found, f"Streams group {req.group_id} not found.")
            group = self.groups[req.group_id] = StreamsGroup(req.group_id)
        async with group.lock:
            if self.groups.get(group.group_id) is not group:
                return StreamsHeartbeatResult(ErrorCode.not_coordinator)
            saved, records = GroupSnapshot(group), []
            try:
                result = (self._leave(group, req, records) if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
                          else self._heartbeat(group, req, records))
            except Refused as exc:
                saved.restore(group)
                self._forget_if_new(group)
                return StreamsHeartbeatResult(exc.error, exc.message)
            stored = await self._write(group, saved, records)
            if stored is not ErrorCode.none:
                self._forget_if_new(group)
                return StreamsHeartbeatResult(stored)
            member = group.members.get(result.member_id)  # as its records made it
            if member is not None:
                self._arm_session(group, member)
                self._arm_revocation(group, member)
            return result

    async def _write(self, group: StreamsGroup, saved: GroupSnapshot, records: list) -> ErrorCode:
        """The change worked out on `group` is put back as `saved` has it and its records, replayed
        into it (replay.py), are written; once they are stored, what no record holds is set again
        as the change left it. If they are not, the runtime put the group back as the log holds
        it: each member without a session gets one."""
        unrecorded = UnrecordedState(group)
        saved.restore(group)
        stored = await self.store.writes.write(group.group_id, records)
        if stored is ErrorCode.none:
            unrecorded.restore(group)
        else:
            self.rearm(group)
        return stored

    # --- one heartbeat, under the group's lock ---------------------------------------------------

    def _forget_if_new(self, group: StreamsGroup) -> None:
        """A group this failed request created, and nothing stored: it never existed."""
        if not group.members and group.epoch == 0 and self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    def _leave(self, group: StreamsGroup, req: StreamsHeartbeat, records: list) -> StreamsHeartbeatResult:
        member = group.members.get(req.member_id) if req.instance_id is None else check_static(group, req)
        if member is None:
            raise Refused(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {group.group_id}.")
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # It will be back: its tasks stay its own until then or until its session ends.
            member.current = replace(member.current, epoch=STATIC_LEAVE_EPOCH)
            records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                            rec.current_value(member.current)))
            return StreamsHeartbeatResult(member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH)
        log.info("group %s: member %s left", group.group_id, member.member_id)
        self._remove(group, member, records)
        return StreamsHeartbeatResult(member_id=member.member_id, member_epoch=LEAVE_EPOCH)

    def _heartbeat(self, group: StreamsGroup, req: StreamsHeartbeat, records: list) -> StreamsHeartbeatResult:
        member, new, bump = self._member_for(group, req, records)
        metadata = updated(member.metadata, req)
        if new or metadata != member.metadata:
            bump = bump or metadata != member.metadata
            member.metadata = metadata
            records.append((rec.key(rec.MEMBER_METADATA, group.group_id, member.member_id),
                            rec.member_metadata_value(metadata)))
        statuses = []
        if req.topology is not None:
            if group.topology is None:
                group.topology = req.topology
                records.append((rec.key(rec.TOPOLOGY, group.group_id), rec.topology_value(req.topology)))
                log.info("group %s: member %s initialized the topology at epoch %d", group.group_id,
                         member.member_id, req.topology.epoch)
            elif group.topology.epoch <= req.topology.epoch and group.topology != req.topology:
                raise Refused(ErrorCode.invalid_request, "Topology updates are not supported yet.")
        if group.topology is not None and metadata.topology_epoch < group.topology.epoch:
            statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {metadata.topology_epoch} is behind the "
                                             f"group's topology epoch {group.topology.epoch}."))
        configured = self._configure(group)
        if configured != group.configured:
            group.configured = configured
            bump = True
        validated = group.topology.epoch if configured.ready else -1
        if validated != group.validated_epoch:
            group.validated_epoch = validated
            bump = True
        if configured.ready and req.owned is not None:
            check_owned(configured.tasks, req.owned)
        if bump:
            self._bump(group, records)
        self._maybe_assign(group, records)
        before = member.current
        try:
            current = reconcile(before, metadata.process_id, target_epoch=group.assignment_epoch,
                                target=group.targets.get(member.member_id, Tasks()), holders=group.holders(),
                                owned=req.owned)
        except Fenced as exc:
            raise Refused(ErrorCode.fenced_member_epoch, str(exc)) from None
        if current != before:
            member.current = current
            records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                            rec.current_value(current)))
        if req.task_offsets is not None:
            member.task_offsets = req.task_offsets
        if req.task_end_offsets is not None:
            member.task_end_offsets = req.task_end_offsets
        if req.shutdown_application:
            group.shutdown_requested_by = member.member_id
        send = req.member_epoch == 0 or current.assigned != before.assigned
        if send and metadata.user_endpoint is not None:
            group.endpoint_epoch += 1
        if configured.status is not None:
            statuses.append(configured.status)
        if group.shutdown_requested_by is not None:
            statuses.append((SHUTDOWN_APPLICATION, f"Streams group member {group.shutdown_requested_by} encountered "
                                                   "a fatal error and requested a shutdown for the entire application."))
        endpoints = None
        if group.endpoint_epoch != req.endpoint_information_epoch:
            partitions_of = self._partitions_of()
            endpoints = tuple((m.metadata.user_endpoint,
                               task_partitions(group.topology, m.current.assigned.active, partitions_of),
                               task_partitions(group.topology, m.current.assigned.standby, partitions_of))
                              for m in group.members.values() if m.metadata.user_endpoint is not None)
        return StreamsHeartbeatResult(
            member_id=member.member_id, member_epoch=current.epoch,
            heartbeat_interval_ms=self.settings.heartbeat_interval_ms, tasks=current.assigned if send else None,
            statuses=tuple(statuses), endpoint_epoch=group.endpoint_epoch, endpoints=endpoints,
            to_create=tuple(configured.to_create.values()))

    def _member_for(self, group: StreamsGroup, req: StreamsHeartbeat,
                    records: list) -> tuple[StreamsMember, bool, bool]:
        """(the member, whether it is new to the group, whether that alone moves the group epoch)."""
        holder = None if req.instance_id is None else check_static(group, req)
        member = group.members.get(req.member_id)
        if req.member_epoch == 0:
            if holder is not None and holder is not member:
                return self._replace_static(group, holder, req.member_id, records), True, False
            if member is None:
                member = group.members[req.member_id] = StreamsMember(req.member_id)
                return member, True, True
            if member.current.state is MemberState.UNKNOWN:  # rejoining from nothing, as it must
                member.current = CurrentTasks()
                records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                                rec.current_value(member.current)))
            return member, False, False  # its join answer was lost: it keeps what it has
        if member is None:
            raise Refused(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {group.group_id}.")
        check_epoch(member, req)
        return member, False, False

    def _replace_static(self, group: StreamsGroup, old: StreamsMember, member_id: str,
                        records: list) -> StreamsMember:
        """A static member back under a new member id takes over its old self's tasks and target;
        the group epoch stays (the assignor sees the same group), as Kafka does."""
        target = group.targets.get(old.member_id, Tasks())
        for record_type in (rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA):
            records.append((rec.key(record_type, group.group_id, old.member_id), None))
        group.remove(old)
        member = group.members[member_id] = StreamsMember(member_id, old.metadata,
                                                           CurrentTasks(assigned=old.current.assigned))
        group.targets[member_id] = target
        records.append((rec.key(rec.TARGET_MEMBER, group.group_id, member_id), rec.tasks_value(target)))
        records.append((rec.key(rec.CURRENT_ASSIGNMENT, group.group_id, member_id), rec.current_value(member.current)))
        return member

    def _partitions_of(self):
        """name -> the partition count of that topic now, None if there is none."""
        topics = self.topics()

        def partitions_of(name: str) -> int | None:
            topic = topics.get(name)
            return None if topic is None else len(topic.partitions)

        return partitions_of

    def _configure(self, group: StreamsGroup) -> ConfiguredTopology:
        if group.topology is None:  # its topology record was deleted: nothing to run
            return ConfiguredTopology(None)
        try:
            return configure(group.topology, self._partitions_of())
        except InvalidTopology as exc:
            raise Refused(ErrorCode.streams_invalid_topology, str(exc)) from None

    def _bump(self, group: StreamsGroup, records: list) -> None:
        group.epoch += 1
        records.append((rec.key(rec.GROUP_METADATA, group.group_id),
                        rec.group_metadata_value(group.epoch, group.validated_epoch)))

    def _maybe_assign(self, group: StreamsGroup, records: list) -> None:
        if group.epoch <= group.assignment_epoch:
            return
        configured, topology = group.configured, group.topology
        if configured is not None and configured.ready:
            views = {mid: sticky_assignor.MemberView(m.metadata.process_id, group.targets.get(mid, Tasks()))
                     for mid, m in group.members.items()}
            stateful = {s.subtopology_id for s in topology.subtopologies if s.stateful}
            targets = sticky_assignor.assign(views, configured.tasks, stateful, self.settings.num_standby_replicas)
        else:
            targets = {mid: Tasks() for mid in group.members}  # nothing to run until it is ready
        for mid, target in targets.items():
            if mid not in group.targets or target != group.targets[mid]:
                records.append((rec.key(rec.TARGET_MEMBER, group.group_id, mid), rec.tasks_value(target)))
        group.targets = targets
        group.assignment_epoch = group.epoch
        records.append((rec.key(rec.TARGET_METADATA, group.group_id), rec.epoch_value(group.assignment_epoch)))
        log.info("group %s: epoch %d, tasks assigned to %d members", group.group_id, group.epoch, len(group.members))

    def _remove(self, group: StreamsGroup, member: StreamsMember, records: list) -> None:
        for record_type in (rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA):
            records.append((rec.key(record_type, group.group_id, member.member_id), None))
        group.remove(member)
        if group.shutdown_requested_by == member.member_id and not group.members:
            group.shutdown_requested_by = None
        self._bump(group, records)

    def restored(self, group_ids) -> None:
        """After a replay (replay.py): each loaded group's topology configured against the topics
        as they are, and a fresh session for each member, as Kafka's onLoaded gives."""
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                continue
            try:
                group.configured = self._configure(group)
            except Refused:
                group.configured = None
            self.rearm(group)

    def rearm(self, group: StreamsGroup) -> None:
        """A session for each member without one (one a failed change put back)."""
        for member in group.members.values():
            if member.expiry is None:
                self._arm_session(group, member)

    # --- timers ----------------------------------------------------------------------------------

    def _arm_session(self, group: StreamsGroup, member: StreamsMember) -> None:
        if member.expiry is not None:
            member.expiry.cancel()
        member.expiry = self.classic.timers.schedule(
            group.group_id, self.settings.session_timeout_ms,
            lambda: self._expire(group, member, "session timed out", None), "session")

    def _arm_revocation(self, group: StreamsGroup, member: StreamsMember) -> None:
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

    async def _expire(self, group: StreamsGroup, member: StreamsMember, why: str, revoking_at: int | None) -> None:
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
            self._remove(group, member, records)
            stored = await self._write(group, saved, records)
            if stored is not ErrorCode.none:  # tried again at the next session timeout
                log.info("group %s: removing member %s failed: %s", group.group_id, member.member_id, stored.name)

    # --- unloading, deleting ---------------------------------------------------------------------

    async def delete(self, group_id: str) -> ErrorCode | None:
        """DeleteGroups of a streams group: NON_EMPTY_GROUP while it has members, else ErrorCode.none
        once its tombstones are stored (its committed offsets are the classic group's); None: no
        such group."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        async with group.lock:
            if group.members:
                return ErrorCode.non_empty_group
            if self.groups.get(group_id) is not group:
                return None
            records = [(rec.key(t, group_id), None) for t in (rec.TARGET_METADATA, rec.TOPOLOGY, rec.GROUP_METADATA)]
            return await self.store.writes.write(group_id, records)  # replay.py forgets the group

    def unload(self, group: StreamsGroup) -> None:
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        group.dead = True
        for member in group.members.values():
            member.cancel_timers()
