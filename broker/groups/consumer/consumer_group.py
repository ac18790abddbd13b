"""One KIP-848 consumer group: its epochs, members, target assignment and who holds what.

Plain data plus the rules that need no clock or I/O. The group epoch moves whenever what the
assignor would see changes (a member joins, leaves or changes its subscription; a subscribed
topic gains partitions or goes away); the target assignment is computed at an assignment
epoch, which catches up with the group epoch; each member reconciles toward its part of the
target at its own member epoch (reconciliation.py). `holders` keeps, per partition, the epoch
of the member holding it (assigned or pending revocation), so a partition has one holder.
The state is derived, as Kafka's ConsumerGroup.state():

    Empty        no members
    Assigning    the group epoch is ahead of the target assignment's
    Reconciling  some member is not yet at the target epoch, or not stable
    Stable       every member holds its target at the target epoch
"""

from __future__ import annotations

import asyncio
import enum
import re
import uuid
from dataclasses import dataclass, field

from broker.coordinator.clock import TimerHandle
from broker.topic_names import INTERNAL_TOPICS
from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.reconciliation import CurrentAssignment, MemberState
from broker.groups.consumer.topic_partitions import Assignment

LEAVE_EPOCH = -1  # a member leaving
STATIC_LEAVE_EPOCH = -2  # a static member leaving for now: its assignment waits for it


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMetadata:
    """A member that joined through JoinGroup (Kafka 4's mixed groups): its session timeout and
    the protocols it offered, kept so the group can become classic again."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, ConsumerProtocolSubscription) by preference


@dataclass(frozen=True)
class MemberMetadata:
    """What a member says about itself: Kafka's ConsumerGroupMemberMetadata record."""

    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMetadata | None = None  # None: the member heartbeats with ConsumerGroupHeartbeat


@dataclass(frozen=True)
class SubscribedTopic:
    """A topic some member subscribes to, as the assignor saw it (PartitionMetadata record)."""

    topic_id: uuid.UUID
    name: str
    partitions: int


@dataclass
class ConsumerMember:
    member_id: str
    metadata: MemberMetadata = field(default_factory=MemberMetadata)
    current: CurrentAssignment = field(default_factory=CurrentAssignment)
    expiry: TimerHandle | None = None  # session timeout
    revocation_deadline: TimerHandle | None = None  # rebalance timeout while revoking

    def subscribes_to(self, name: str) -> bool:
        """By name, or by the regex (a whole-name match, as Java's Pattern.matches; internal
        topics never match one, as in Kafka)."""
        if name in self.metadata.subscribed_topic_names:
            return True
        regex = self.metadata.subscribed_topic_regex
        return bool(regex) and name not in INTERNAL_TOPICS and compiled(regex).fullmatch(name) is not None

    def cancel_timers(self) -> None:
        for timer in (self.expiry, self.revocation_deadline):
            if timer is not None:
                timer.cancel()
        self.expiry = self.revocation_deadline = None


_COMPILED: dict[str, re.Pattern] = {}


def compiled(regex: str) -> re.Pattern:
    """The regex compiled once (re.error for an invalid one: INVALID_REGULAR_EXPRESSION)."""
    pattern = _COMPILED.get(regex)
    if pattern is None:
        pattern = _COMPILED[regex] = re.compile(regex)
    return pattern


@dataclass
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)  # member id -> its target
    topics: dict[uuid.UUID, SubscribedTopic] = field(default_factory=dict)  # at the group epoch
    holders: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one heartbeat changes it at a time
    dead: bool = False  # unloaded or deleted: a timer or write still in flight finds it so

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.current.epoch != self.assignment_epoch or m.current.state is not MemberState.STABLE
               for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def owner_epoch(self, topic: uuid.UUID, partition: int) -> int:
        return self.holders.get((topic, partition), -1)

    def set_current(self, member: ConsumerMember, current: CurrentAssignment) -> None:
        """Give the member its new assignment, moving the partitions' holders with it."""
        for pair in tp.pairs(member.current.held()):
            self.holders.pop(pair, None)
        member.current = current
        for pair in tp.pairs(current.held()):
            self.holders[pair] = current.epoch

    def remove(self, member: ConsumerMember) -> None:
        self.set_current(member, CurrentAssignment())
        member.cancel_timers()
        self.members.pop(member.member_id, None)
        self.targets.pop(member.member_id, None)

    def member_by_instance(self, instance_id: str) -> ConsumerMember | None:
        for member in self.members.values():
            if member.metadata.instance_id == instance_id:
                return member
        return None

    def subscribed_ids(self, member: ConsumerMember) -> frozenset[uuid.UUID]:
        return frozenset(t.topic_id for t in self.topics.values()
                         if member.subscribes_to(t.name))
