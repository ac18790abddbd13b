"""One KIP-1071 streams group: its topology, epochs, members, targets and who holds which task.

Plain data plus the rules that need no clock or I/O. The epochs are a consumer group's
(consumer_group.py): the group epoch moves when what the assignor sees changes (members, their
metadata, the topology's configuration against the topics), the target is computed at an
assignment epoch catching up with it, and each member reconciles at its own epoch. The state,
as Kafka's StreamsGroup.state():

    Empty        no members
    NotReady     the topology is not configured yet (a source or internal topic is missing)
    Assigning    the group epoch is ahead of the target assignment's
    Reconciling  some member is not yet at the target epoch, or not stable
    Stable       every member holds its target at the target epoch
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field

from broker.coordinator.clock import TimerHandle
from broker.groups.consumer.reconciliation import MemberState
from broker.groups.streams.reconciliation import CurrentTasks, Holders
from broker.groups.streams.tasks import Tasks
from broker.groups.streams.topology import ConfiguredTopology, Topology


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class MemberMetadata:
    """What a member says about itself: Kafka's StreamsGroupMemberMetadata record."""

    process_id: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topology_epoch: int = -1
    rebalance_timeout_ms: int = -1
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()


@dataclass
class StreamsMember:
    member_id: str
    metadata: MemberMetadata = field(default_factory=MemberMetadata)
    current: CurrentTasks = field(default_factory=CurrentTasks)
    expiry: TimerHandle | None = None  # session timeout
    revocation_deadline: TimerHandle | None = None  # rebalance timeout while revoking
    # What the member last reported of its tasks' progress (offset sums), for StreamsGroupDescribe;
    # in memory only, as Kafka keeps them
    task_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    task_end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)

    def cancel_timers(self) -> None:
        for timer in (self.expiry, self.revocation_deadline):
            if timer is not None:
                timer.cancel()
        self.expiry = self.revocation_deadline = None


@dataclass
class StreamsGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    targets: dict[str, Tasks] = field(default_factory=dict)
    topology: Topology | None = None
    configured: ConfiguredTopology | None = None  # the topology against the topics, last heartbeat
    validated_epoch: int = -1  # the topology epoch last configured ready
    endpoint_epoch: int = 0  # bumped when the owners of the user endpoints' partitions change
    shutdown_requested_by: str | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dead: bool = False

    @property
    def state(self) -> StreamsGroupState:
        if self.dead:
            return StreamsGroupState.DEAD
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.current.epoch != self.assignment_epoch or m.current.state is not MemberState.STABLE
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def holders(self) -> Holders:
        """Who holds each task now (assigned or pending revocation), by process."""
        active: dict[tuple[str, int], str] = {}
        other: dict[tuple[str, int], set[str]] = {}
        for m in self.members.values():
            held = m.current.held()
            for s, ps in held.active.items():
                for p in ps:
                    active[(s, p)] = m.metadata.process_id
            for tasks in (held.standby, held.warmup):
                for s, ps in tasks.items():
                    for p in ps:
                        other.setdefault((s, p), set()).add(m.metadata.process_id)
        return Holders(lambda s, p: active.get((s, p)), lambda s, p: other.get((s, p), set()))

    def remove(self, member: StreamsMember) -> None:
        member.cancel_timers()
        self.members.pop(member.member_id, None)
        self.targets.pop(member.member_id, None)


class GroupSnapshot:
    """The group as it was before a change: put back when the change is refused halfway, and
    before its records are replayed into it (replay.py, which saves it so for the runtime to put
    back if they are not written). Members stay the same objects: their timers stay theirs."""

    def __init__(self, group: StreamsGroup) -> None:
        self.members = {mid: (m, m.metadata, m.current) for mid, m in group.members.items()}
        self.fields = (group.epoch, group.assignment_epoch, dict(group.targets), group.topology, group.configured,
                       group.validated_epoch, group.endpoint_epoch, group.shutdown_requested_by)

    def restore(self, group: StreamsGroup) -> None:
        for mid, member in group.members.items():
            if mid not in self.members:
                member.cancel_timers()
        group.members = {}
        for mid, (member, metadata, current) in self.members.items():
            member.metadata, member.current = metadata, current
            group.members[mid] = member
        (group.epoch, group.assignment_epoch, group.targets, group.topology, group.configured,
         group.validated_epoch, group.endpoint_epoch, group.shutdown_requested_by) = self.fields


class UnrecordedState:
    """What of a group no record holds, kept in memory as Kafka keeps it (replay.py lists it),
    as a change left it: set again once the change's records are stored, since the group was put
    back before they were replayed into it. Members are matched by id: one the change added is
    the replay's object, not the change's."""

    def __init__(self, group: StreamsGroup) -> None:
        self.fields = group.configured, group.endpoint_epoch, group.shutdown_requested_by
        self.progress = {mid: (m.task_offsets, m.task_end_offsets) for mid, m in group.members.items()}

    def restore(self, group: StreamsGroup) -> None:
        group.configured, group.endpoint_epoch, group.shutdown_requested_by = self.fields
        for mid, member in group.members.items():
            if mid in self.progress:
                member.task_offsets, member.task_end_offsets = self.progress[mid]
