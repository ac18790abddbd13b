"""How a streams member's tasks converge to its target: Kafka's streams CurrentAssignmentBuilder.

The same state machine as a consumer member's (groups/consumer/reconciliation.py, whose
MemberState this shares): a member first gives up what its target takes away (UNREVOKED, at its
own epoch), then gets what the target gives once nobody else still holds it (UNRELEASED while
waiting), at the target epoch. What "still held" means differs per task kind:

- an active task waits while any member holds it active, or while this member's own process
  still holds it as a standby or warm-up (one process never runs both);
- a standby or warm-up task waits while this member's process holds it in any kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from broker.groups.consumer.reconciliation import MemberState
from broker.groups.streams.tasks import EMPTY, KINDS, Tasks, TaskMap


@dataclass(frozen=True)
class CurrentTasks:
    """What a member holds now: Kafka's StreamsGroupCurrentMemberAssignment record."""

    state: MemberState = MemberState.STABLE
    epoch: int = 0
    previous_epoch: int = -1
    assigned: Tasks = EMPTY
    pending_revocation: Tasks = field(default=EMPTY)

    def held(self) -> Tasks:
        return self.assigned.union(self.pending_revocation)


class Fenced(Exception):
    """FENCED_MEMBER_EPOCH: the member must give up its tasks and rejoin."""


@dataclass(frozen=True)
class Holders:
    """Who holds each task now: the active's process, and the processes with it as standby or warm-up."""

    active: Callable[[str, int], str | None]
    other: Callable[[str, int], set[str]]  # processes holding it as a standby or warm-up


def reconcile(member: CurrentTasks, process_id: str, *, target_epoch: int, target: Tasks, holders: Holders,
              owned: Tasks | None) -> CurrentTasks:
    """The member's next tasks after a heartbeat reporting `owned` (None: not reported)."""
    if member.state is MemberState.STABLE:
        if member.epoch == target_epoch:
            return member
        return _next(member, member.epoch, process_id, target_epoch, target, holders, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned.intersects(member.pending_revocation):
            return member
        return _next(member, member.epoch + 1, process_id, target_epoch, target, holders, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.epoch, process_id, target_epoch, target, holders, owned)
    if owned is None or not owned.is_empty():
        raise Fenced("The streams group member is in a unknown state. The member must abandon all its tasks "
                     "and rejoin.")
    return _next(member, target_epoch, process_id, target_epoch, target, holders, owned)


def _next(member: CurrentTasks, epoch: int, process_id: str, target_epoch: int, target: Tasks, holders: Holders,
          owned: Tasks | None) -> CurrentTasks:
    def active_unreleased(s: str, p: int) -> bool:
        return holders.active(s, p) is not None or process_id in holders.other(s, p)

    def other_unreleased(s: str, p: int) -> bool:
        return holders.active(s, p) == process_id or process_id in holders.other(s, p)

    kept, revoke, add, unreleased = {}, {}, {}, False
    for kind in KINDS:
        waits = active_unreleased if kind == "active" else other_unreleased
        kept[kind], revoke[kind], add[kind], blocked = _difference(member.assigned.of(kind), target.of(kind), waits)
        unreleased = unreleased or blocked
    revoking, adding = Tasks(**revoke), Tasks(**add)
    if not revoking.is_empty() and (owned is None or owned.intersects(revoking)):
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, epoch=epoch, previous_epoch=member.epoch,
                       assigned=Tasks(**kept), pending_revocation=revoking)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member, state=state, epoch=target_epoch, previous_epoch=member.epoch,
                   assigned=Tasks(**kept).union(adding), pending_revocation=EMPTY)


def _difference(current: TaskMap, target: TaskMap, waits: Callable[[str, int], bool]
                ) -> tuple[TaskMap, TaskMap, TaskMap, bool]:
    """(kept, to revoke, to add now, whether some target task must wait for its holder)."""
    kept, revoke, add, blocked = {}, {}, {}, False
    for s in set(current) | set(target):
        have, want = current.get(s, frozenset()), target.get(s, frozenset())
        keep = have & want
        free = frozenset(p for p in want - keep if not waits(s, p))
        blocked = blocked or len(free) < len(want - keep)
        for out, value in ((kept, keep), (revoke, have - keep), (add, free)):
            if value:
                out[s] = value
    return kept, revoke, add, blocked
