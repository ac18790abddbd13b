"""A classic group's generations over time: the join phase, the sync phase and members' sessions.

The coordinator (coordinator.py) answers requests; what happens when no request comes is here,
on timers of the group's `__consumer_offsets` partition (group_timers.py, on the coordinator
runtime's clock), as Kafka's DelayedJoin, DelayedSync and DelayedHeartbeat:

- the join phase waits for every member to rejoin, at most the group's largest rebalance
  timeout; a group that was empty first waits group.initial.rebalance.delay.ms, extended while
  new members keep arriving, so a starting fleet of consumers gets one assignment. When it ends
  the members that did not rejoin are removed and the rest get the new generation;
- the sync phase waits, as long again, for the leader's assignment; without it the members
  that did not send a SyncGroup are removed and the group rebalances;
- a member's session expires unless a request renews it (`keep_alive`); a member waiting in a
  rebalance is alive. An expired member is removed and the group rebalances.

Each change of state follows state.TRANSITIONS.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from wire.error_codes import ErrorCode
from broker.groups.group import Group, Member
from broker.groups.group_timers import GroupTimers
from broker.groups.join_messages import answer_waiters, join_result
from broker.groups.state import Event, GroupState, transition

log = logging.getLogger(__name__)


class Rebalancer:
    def __init__(self, initial_rebalance_delay_ms: int, persist: Callable[[Group], None], timers: GroupTimers) -> None:
        """`persist(group)`: store the group's metadata (an emptied group's, here)."""
        self._initial_delay_ms = initial_rebalance_delay_ms
        self._persist = persist
        self._timers = timers

    # --- the join phase ---------------------------------------------------------------------

    def start(self, group: Group) -> None:
        """A member joins: the group prepares a rebalance, or extends its initial delay."""
        if group.state is GroupState.PREPARING_REBALANCE:
            if group.join_timer is not None and group.join_deadline_ms:
                self._extend_initial_delay(group)
            return
        was_empty = group.state is GroupState.EMPTY
        self.set_state(group, transition(group.state, Event.JOIN).next)
        self.cancel_sync(group)
        self._abort_syncs(group)  # a SyncGroup parked while the assignment is being stored
        if was_empty and self._initial_delay_ms > 0:
            # Kafka's group.initial.rebalance.delay.ms: let a starting fleet of consumers arrive
            # before the first assignment, extending while new members keep joining.
            group.join_deadline_ms = self._timers.now_ms() + group.max_rebalance_timeout_ms()
            self._join_after(group, min(self._initial_delay_ms, group.join_deadline_ms - self._timers.now_ms()))
        else:
            group.join_deadline_ms = 0
            self._join_after(group, group.max_rebalance_timeout_ms())

    def _join_after(self, group: Group, delay_ms: int) -> None:
        group.join_timer = self._timers.schedule(group.group_id, delay_ms, lambda: self._complete_join(group),
                                                 "join phase")

    def _extend_initial_delay(self, group: Group) -> None:
        remaining = group.join_deadline_ms - self._timers.now_ms()
        if remaining <= 0 or group.join_timer is None:
            return
        group.join_timer.cancel()
        self._join_after(group, min(self._initial_delay_ms, remaining))

    def maybe_complete_join(self, group: Group) -> None:
        # The initial delay always runs out; any other join phase ends as soon as all are in.
        if group.state is GroupState.PREPARING_REBALANCE and not group.join_deadline_ms and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.join_deadline_ms = 0
        for member in [m for m in group.members.values() if m.join_waiter is None]:
            log.info("group %s: member %s did not rejoin in time; removing it", group.group_id, member.member_id)
            self.remove_member(group, member, None, rebalance=False)
        group.pending_members.clear()
        group.generation += 1
        if not group.members:
            self.set_state(group, transition(group.state, Event.JOIN_PHASE_DONE_EMPTY).next)
            group.protocol_name = group.leader_id = None
            self._persist(group)
            return
        self.set_state(group, transition(group.state, Event.JOIN_PHASE_DONE).next)
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        log.info("group %s: generation %d, protocol %s, leader %s, %d members", group.group_id,
                 group.generation, group.protocol_name, group.leader_id, len(group.members))
        for member in group.members.values():
            member.assignment = b""
            waiter, member.join_waiter = member.join_waiter, None
            if not waiter.done():
                waiter.set_result(join_result(group, member))
            self.keep_alive(group, member)
        group.sync_timer = self._timers.schedule(group.group_id, group.max_rebalance_timeout_ms(),
                                                 lambda: self._sync_expired(group), "sync phase")

    # --- the sync phase ---------------------------------------------------------------------

    def _sync_expired(self, group: Group) -> None:
        group.sync_timer = None
        if group.state is not GroupState.COMPLETING_REBALANCE:
            return
        log.info("group %s: no assignment from leader %s in time; rebalancing", group.group_id, group.leader_id)
        for member in [m for m in group.members.values() if m.sync_waiter is None]:
            self.remove_member(group, member, None, rebalance=False)
        self.after_change(group, Event.SYNC_TIMEOUT)

    def cancel_sync(self, group: Group) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _abort_syncs(self, group: Group) -> None:
        """Members parked in SyncGroup learn that a new rebalance began."""
        for m in group.members.values():
            if m.sync_waiter is not None and not m.sync_waiter.done():
                m.sync_waiter.set_result((ErrorCode.rebalance_in_progress, b""))
            m.sync_waiter = None

    # --- sessions ---------------------------------------------------------------------------

    def keep_alive(self, group: Group, member: Member) -> None:
        """The member showed it is alive (a heartbeat, a join, a commit): its session restarts."""
        member.cancel_expiry()
        member.expiry = self._timers.schedule(group.group_id, member.session_timeout_ms,
                                              lambda: self._session_expired(group, member), "session")

    def _session_expired(self, group: Group, member: Member) -> None:
        member.expiry = None
        if group.members.get(member.member_id) is not member:
            return
        if member.join_waiter is not None or member.sync_waiter is not None:
            return  # waiting in a rebalance counts as alive
        log.info("group %s: member %s session expired (%d ms)", group.group_id, member.member_id,
                 member.session_timeout_ms)
        self.remove_member(group, member, None)

    def expire_pending_later(self, group: Group, member_id: str, timeout_ms: int) -> None:
        """A member id handed out (MEMBER_ID_REQUIRED) and not joined with in `timeout_ms` lapses."""
        def expire() -> None:
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.maybe_complete_join(group)

        self._timers.schedule(group.group_id, timeout_ms, expire, "pending member id")

    # --- changes of membership and state -----------------------------------------------------

    def remove_member(self, group: Group, member: Member, waiter_error: ErrorCode | None, rebalance: bool = True) -> None:
        """`waiter_error`: what the member's parked requests are answered (UNKNOWN_MEMBER_ID if None)."""
        group.members.pop(member.member_id, None)
        member.cancel_expiry()
        answer_waiters(member, waiter_error or ErrorCode.unknown_member_id)
        if rebalance:
            self.after_change(group, Event.MEMBER_GONE)

    def after_change(self, group: Group, event: Event) -> None:
        """Membership changed (or an assignment was lost): rebalance if the state says so."""
        before = group.state
        self.set_state(group, transition(before, event).next)
        if group.state is GroupState.PREPARING_REBALANCE:
            if before is not GroupState.PREPARING_REBALANCE:
                self.cancel_sync(group)
                self._abort_syncs(group)
                group.join_deadline_ms = 0
                self._join_after(group, group.max_rebalance_timeout_ms())
            self.maybe_complete_join(group)

    def set_state(self, group: Group, state: GroupState) -> None:
        if state is not group.state:
            group.state = state
            group.state_timestamp = self._timers.now_ms()
