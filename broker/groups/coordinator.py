"""The group coordinator: membership and rebalances of classic consumer groups.

A single broker coordinates every group. In a cluster a broker coordinates the groups whose
`__consumer_offsets` partition it leads and has loaded (`local_partitions`, kept by
group_loading.py); any other group gets NOT_COORDINATOR, and a group whose partition moves away is
unloaded: forgotten, with its parked requests answered NOT_COORDINATOR, so the client looks up the
new coordinator, which has replayed the group from the log. Requests that must wait (a JoinGroup
until every member has rejoined, a follower's SyncGroup until the leader's assignment arrives) park
a future on their member; timers of the group's partition (rebalance.py, group_timers.py) expire
sessions and bound each phase by the rebalance timeout. What a request may do in each state is decided by
state.TRANSITIONS; this module does the waiting and the bookkeeping, rebalance.py the timing.
Committed offsets live in offsets.py, sharing the group objects held here.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from wire.error_codes import ErrorCode
from broker.groups import offsets_log
from broker.groups.group import Group, Member
from broker.groups.group_timers import GroupTimers
from broker.groups.join_messages import JoinRequest, JoinResult, answer_waiters, join_result
from broker.groups.rebalance import Rebalancer
from broker.groups.state import Event, GroupState, transition

log = logging.getLogger(__name__)


class GroupCoordinator:
    def __init__(self, store, timers: GroupTimers, initial_rebalance_delay_ms: int,
                 session_timeout_range_ms: tuple[int, int] = (6_000, 1_800_000)) -> None:
        self.groups: dict[str, Group] = {}
        self._store = store
        self.timers = timers  # every kind of group's, on the coordinator runtime's clock
        self.rebalance = Rebalancer(initial_rebalance_delay_ms, self._persist_group, timers)
        # group.min.session.timeout.ms / group.max.session.timeout.ms
        self.session_timeout_range_ms = session_timeout_range_ms
        # None: every group is ours (one broker). In a cluster: the offsets partitions this
        # broker leads and has loaded.
        self.local_partitions: set[int] | None = None

    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR for a group this broker does not coordinate (Kafka's isGroupLocal)."""
        if self.local_partitions is None or self._store.partition_index(group_id) in self.local_partitions:
            return None
        return ErrorCode.not_coordinator

    # --- membership -------------------------------------------------------------------------

    async def join(self, req: JoinRequest) -> JoinResult:
        if not req.group_id:
            return JoinResult(ErrorCode.invalid_group_id, req.member_id)
        not_here = self.coordinator_error(req.group_id)
        if not_here:
            return JoinResult(not_here, req.member_id)
        if not self.session_timeout_range_ms[0] <= req.session_timeout_ms <= self.session_timeout_range_ms[1]:
            return JoinResult(ErrorCode.invalid_session_timeout, req.member_id)
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_id:
                return JoinResult(ErrorCode.unknown_member_id, req.member_id)
            group = self.groups[req.group_id] = Group(req.group_id, state_timestamp=self.timers.now_ms())
        if group.state is GroupState.DEAD:
            return JoinResult(ErrorCode.coordinator_not_available, req.member_id)
        if not group.supports(req.protocol_type, [name for name, _ in req.protocols]):
            return JoinResult(ErrorCode.inconsistent_group_protocol, req.member_id)

        if not req.member_id:
            if req.group_instance_id is not None:
                return await self._join_static(group, req)
            member_id = f"{req.client_id}-{uuid.uuid4()}"
            if req.require_known_member:
                group.pending_members.add(member_id)
                self.rebalance.expire_pending_later(group, member_id, req.session_timeout_ms)
                return JoinResult(ErrorCode.member_id_required, member_id)
            return await self._add_and_rebalance(group, req, member_id)

        if req.member_id in group.pending_members:
            group.pending_members.discard(req.member_id)
            return await self._add_and_rebalance(group, req, req.member_id)
        member = group.members.get(req.member_id)
        if member is None:
            return JoinResult(ErrorCode.unknown_member_id, req.member_id)
        if group.is_fenced(req.member_id, req.group_instance_id):
            return JoinResult(ErrorCode.fenced_instance_id, req.member_id)
        unchanged = member.same_protocols(req.protocols)
        if group.state is GroupState.COMPLETING_REBALANCE and unchanged:
            return self._current_generation(group, member)  # a retried join: same answer again
        if group.state is GroupState.STABLE and unchanged and member.member_id != group.leader_id:
            return self._current_generation(group, member)
        member.protocols = req.protocols
        member.session_timeout_ms, member.rebalance_timeout_ms = req.session_timeout_ms, req.rebalance_timeout_ms
        return await self._wait_for_join(group, member)

    async def _join_static(self, group: Group, req: JoinRequest) -> JoinResult:
        """A static member (group.instance.id) rejoining with no member id replaces its old id."""
        old = group.member_by_instance(req.group_instance_id)
        member_id = f"{req.group_instance_id}-{uuid.uuid4()}"
        if old is not None:
            self.rebalance.remove_member(group, old, ErrorCode.fenced_instance_id)
        return await self._add_and_rebalance(group, req, member_id)

    async def _add_and_rebalance(self, group: Group, req: JoinRequest, member_id: str) -> JoinResult:
        member = Member(
            member_id, req.group_instance_id, req.client_id, req.client_host, req.session_timeout_ms,
            req.rebalance_timeout_ms, req.protocol_type, list(req.protocols),
        )
        group.members[member_id] = member
        if group.protocol_type is None or len(group.members) == 1:
            group.protocol_type = req.protocol_type
        return await self._wait_for_join(group, member)

    async def _wait_for_join(self, group: Group, member: Member) -> JoinResult:
        loop = asyncio.get_running_loop()
        member.cancel_expiry()  # a member waiting in a join is alive (Kafka's shouldKeepAlive)
        previous = member.join_waiter
        member.join_waiter = waiter = loop.create_future()
        if previous is not None and not previous.done():
            # The same member joined again (a client retry): both requests get the one answer.
            waiter.add_done_callback(lambda done: previous.done() or previous.set_result(done.result()))
        self.rebalance.start(group)
        self.rebalance.maybe_complete_join(group)
        return await waiter

    def _current_generation(self, group: Group, member: Member) -> JoinResult:
        self.rebalance.keep_alive(group, member)
        return join_result(group, member)

    # --- sync -------------------------------------------------------------------------------

    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> tuple[ErrorCode, bytes]:
        not_here = self.coordinator_error(group_id)
        if not_here:
            return not_here, b""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id, b""
        member, code = group.validate_member(member_id, instance_id, generation)
        if code:
            return code, b""
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
                protocol_name is not None and protocol_name != group.protocol_name):
            return ErrorCode.inconsistent_group_protocol, b""
        is_leader = member_id == group.leader_id
        outcome = transition(group.state, Event.LEADER_SYNC if is_leader else Event.FOLLOWER_SYNC)
        if outcome.error:
            return outcome.error, b""
        self.rebalance.keep_alive(group, member)
        if group.state is GroupState.STABLE:
            return ErrorCode.none, member.assignment
        member.sync_waiter = asyncio.get_running_loop().create_future()
        waiter = member.sync_waiter
        if is_leader:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            self.rebalance.cancel_sync(group)
            generation_synced = group.generation
            # As Kafka: the group stays CompletingRebalance (members' SyncGroups park) until the
            # assignment is stored, so nobody holds an assignment a new coordinator would not
            # load. A rebalance or an unload meanwhile has answered the parked requests.
            code = await self._persist_group_async(group)
            if group.state is GroupState.COMPLETING_REBALANCE and group.generation == generation_synced:
                for m in group.members.values():
                    if m.sync_waiter is not None and not m.sync_waiter.done():
                        m.sync_waiter.set_result((code, m.assignment if code is ErrorCode.none else b""))
                    m.sync_waiter = None
                if code is ErrorCode.none:
                    self.rebalance.set_state(group, outcome.next)
                else:  # an assignment that is not stored is not given out: rebalance
                    self.rebalance.after_change(group, Event.SYNC_TIMEOUT)
        return await waiter

    # --- heartbeats, leaving, unloading ----------------------------------------------------------

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        not_here = self.coordinator_error(group_id)
        if not_here:
            return not_here
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return transition(group.state, Event.HEARTBEAT).error
        member, code = group.validate_member(member_id, instance_id, generation)
        if code:
            return code
        self.rebalance.keep_alive(group, member)
        return transition(group.state, Event.HEARTBEAT).error or ErrorCode.none

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """Top-level error and one error per (member_id, instance_id) leaving."""
        not_here = self.coordinator_error(group_id)
        if not_here:
            return not_here, []
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.unknown_member_id if group is None else ErrorCode.coordinator_not_available, []
        codes = []
        for member_id, instance_id in members:
            if instance_id is not None:
                member = group.member_by_instance(instance_id)
                if member is None:
                    codes.append(ErrorCode.unknown_member_id)
                    continue
                if member_id and member.member_id != member_id:
                    codes.append(ErrorCode.fenced_instance_id)
                    continue
            elif member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.rebalance.maybe_complete_join(group)
                codes.append(ErrorCode.none)
                continue
            else:
                member = group.members.get(member_id)
                if member is None:
                    codes.append(ErrorCode.unknown_member_id)
                    continue
            log.info("group %s: member %s left", group.group_id, member.member_id)
            self.rebalance.remove_member(group, member, ErrorCode.unknown_member_id)
            codes.append(ErrorCode.none)
        return ErrorCode.none, codes

    def unload(self, group: Group) -> None:
        """This broker no longer coordinates the group (its offsets partition is led elsewhere):
        forget it and answer what waits in it NOT_COORDINATOR, as Kafka's onGroupUnloaded. The
        members' state stays in the log for the next coordinator."""
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        group.state = GroupState.DEAD  # a timer or an append still in flight finds it dead
        self._stop_waiting(group, ErrorCode.not_coordinator)

    def _stop_waiting(self, group: Group, code: ErrorCode) -> None:
        """No timer runs for the group any more, and every parked request is answered `code`."""
        for timer in (group.join_timer, group.sync_timer):
            if timer is not None:
                timer.cancel()
        group.join_timer = group.sync_timer = None
        group.pending_members.clear()
        for member in group.members.values():
            member.cancel_expiry()
            answer_waiters(member, code)

    # --- the online migration between protocols (groups/consumer/migration.py) ----------------

    def release(self, group: Group) -> None:
        """Its members became a consumer group's: they rejoin there (REBALANCE_IN_PROGRESS to
        what they wait for); the group stays, empty, to keep the offsets."""
        self._stop_waiting(group, ErrorCode.rebalance_in_progress)
        group.members = {}
        group.protocol_name = group.leader_id = None
        self.rebalance.set_state(group, GroupState.EMPTY)

    def adopt(self, group: Group) -> None:
        """A consumer group turned classic again: its members' sessions run here now, and a
        rebalance lets the classic protocol assign."""
        for member in group.members.values():
            self.rebalance.keep_alive(group, member)
        self.rebalance.after_change(group, Event.MEMBER_GONE)

    # --- persistence of group metadata -----------------------------------------------------

    def _persist_group(self, group: Group) -> None:
        asyncio.ensure_future(self._persist_group_async(group))

    async def _persist_group_async(self, group: Group) -> ErrorCode:
        """The coordinator's error (ErrorCode.none: stored, and in a cluster on every in-sync
        replica). The group is changed already: its record is written, not replayed
        (group_writes.py)."""
        record = offsets_log.group_value(offsets_log.group_record(group))
        return await self._store.writes.write(group.group_id, [(offsets_log.group_key(group.group_id), record)])
