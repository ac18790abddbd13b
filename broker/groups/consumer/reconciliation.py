"""How one member's assignment converges to its target: Kafka's CurrentAssignmentBuilder.

A member holds `assigned` partitions at its member `epoch`; the group's target assignment,
computed at the assignment epoch, may give it others. The member moves toward the target in
steps a client can follow without ever sharing a partition with another member:

    Stable ──target moved──► UnrevokedPartitions ──member reports the revoked ones gone──┐
      ▲   (the member must first give up            (epoch + 1, capped by the target's)  │
      │    partitions the target takes away;                                             ▼
      │    it keeps its epoch meanwhile)            ┌───── reconcile toward the target ◄─┘
      │                                             ▼
      └──── every target partition held ◄── UnreleasedPartitions (at the target epoch,
                                              waiting for other members to give up the
                                              partitions it is to get)

A partition is handed to its new owner only once no other member holds it, assigned or
pending revocation (`owner_epoch` says -1): the old owner's heartbeat, not listing it any
more, releases it. `STEPS` is the total table of what a heartbeat does in each state;
`next_assignment` is Kafka's computeNextAssignment, the one step that moves partitions.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable

from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.topic_partitions import Assignment


class MemberState(enum.IntEnum):
    """Kafka's MemberState, with its byte in the CurrentMemberAssignment record."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127  # a state a newer broker wrote: the member is fenced and rejoins from nothing

    @classmethod
    def from_byte(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True)
class CurrentAssignment:
    """What a member holds now: Kafka's ConsumerGroupCurrentMemberAssignment record."""

    state: MemberState = MemberState.STABLE
    epoch: int = 0
    previous_epoch: int = -1  # accepted once more: the response that bumped the epoch may be lost
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def moved_to(self, epoch: int, **changes) -> CurrentAssignment:
        return replace(self, epoch=epoch, previous_epoch=self.epoch, **changes)

    def held(self) -> Assignment:
        """Every partition the member may still be consuming: no one else may get these."""
        return tp.union(self.assigned, self.pending_revocation)


class Step(enum.Enum):
    KEEP = "nothing can move yet"
    DROP_UNSUBSCRIBED = "take topics the member no longer subscribes to out of its assignment"
    NEXT_AT_OWN_EPOCH = "reconcile toward the target, from the member's epoch"
    NEXT_AT_BUMPED_EPOCH = "the revocation is done: reconcile from epoch + 1 (at most the target's)"
    FENCE = "the member's state is unknown here: it must rejoin with nothing"


class Fenced(Exception):
    """The member must give up its partitions and rejoin (FENCED_MEMBER_EPOCH)."""


S, U, R, X = (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS,
              MemberState.UNKNOWN)
K, D, O, B, F = (Step.KEEP, Step.DROP_UNSUBSCRIBED, Step.NEXT_AT_OWN_EPOCH, Step.NEXT_AT_BUMPED_EPOCH,
                 Step.FENCE)

# (state, target epoch differs from the member's, member still holds a partition pending
#  revocation (or did not say what it holds), its subscription changed) -> step
STEPS: dict[tuple[MemberState, bool, bool, bool], Step] = {
    # Stable has nothing pending revocation; a newer target wins over a subscription change
    (S, True, False, False): O, (S, True, False, True): O, (S, True, True, False): O, (S, True, True, True): O,
    (S, False, False, False): K, (S, False, False, True): D, (S, False, True, False): K, (S, False, True, True): D,
    # Unrevoked waits for the revocation, whatever the target does meanwhile
    (U, True, True, False): K, (U, True, True, True): D, (U, False, True, False): K, (U, False, True, True): D,
    (U, True, False, False): B, (U, True, False, True): B, (U, False, False, False): B, (U, False, False, True): B,
    # Unreleased retries: a partition it waits for may have been released since
    **{(R, moved, owns, changed): O for moved in (True, False) for owns in (True, False) for changed in (True, False)},
    **{(X, moved, owns, changed): F for moved in (True, False) for owns in (True, False) for changed in (True, False)},
}


def reconcile(member: CurrentAssignment, *, target_epoch: int, target: Assignment,
              subscribed: frozenset[uuid.UUID], owner_epoch: Callable[[uuid.UUID, int], int],
              owned: Assignment | None, subscription_changed: bool) -> CurrentAssignment:
    """The member's next assignment after a heartbeat reporting `owned` (None: not reported).

    `owner_epoch(topic, partition)` is the epoch of the member holding that partition, -1
    when no member holds it; `subscribed` the topic ids the member subscribes to now."""
    still_owns = _owns_any(owned, member.pending_revocation)
    step = STEPS[(member.state, member.epoch != target_epoch, still_owns, subscription_changed)]
    if step is Step.KEEP:
        return member
    if step is Step.FENCE:
        raise Fenced("the member's assignment state is unknown; it must rejoin")
    if step is Step.DROP_UNSUBSCRIBED:
        return _drop_unsubscribed(member, subscribed, owned)
    epoch = member.epoch if step is Step.NEXT_AT_OWN_EPOCH else min(member.epoch + 1, target_epoch)
    return next_assignment(member, epoch, target_epoch, target, subscribed, owner_epoch, owned)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Kafka's ownsRevokedPartitions: a member that did not report what it owns may own anything."""
    return owned is None or tp.intersects(owned, partitions)


def _drop_unsubscribed(member: CurrentAssignment, subscribed: frozenset[uuid.UUID],
                       owned: Assignment | None) -> CurrentAssignment:
    dropped = {t: ps for t, ps in member.assigned.items() if t not in subscribed}
    if not dropped:
        return member
    assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed}
    pending = tp.union(member.pending_revocation, dropped)
    if _owns_any(owned, pending):
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, assigned=assigned,
                       pending_revocation=pending)
    return replace(member, assigned=assigned)  # already given up: shrink, stay where it is


def next_assignment(member: CurrentAssignment, epoch: int, target_epoch: int, target: Assignment,
                    subscribed: frozenset[uuid.UUID], owner_epoch: Callable[[uuid.UUID, int], int],
                    owned: Assignment | None) -> CurrentAssignment:
    """Kafka's computeNextAssignment: keep what the target keeps, ask for what it takes away,
    and add what it gives once nobody else holds it."""
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    kept: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset()) if topic in subscribed else frozenset()
        current = member.assigned.get(topic, frozenset())
        keep = current & wanted
        own_pending = member.pending_revocation.get(topic, frozenset())
        free = {p for p in wanted - keep if owner_epoch(topic, p) == -1 or p in own_pending}
        unreleased = unreleased or len(free) < len(wanted - keep)
        if keep:
            kept[topic] = frozenset(keep)
        if keep | free:
            assigned[topic] = frozenset(keep | free)
        if current - keep:
            revoke[topic] = frozenset(current - keep)
    if revoke and _owns_any(owned, revoke):
        # Give up first, at the current epoch; nothing new until the revocation is reported.
        return member.moved_to(epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=kept,
                               pending_revocation=revoke)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.moved_to(target_epoch, state=state, assigned=assigned, pending_revocation={})
