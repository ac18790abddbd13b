"""One consumer group's members, generation, chosen protocol and committed offsets (and the
offsets open transactions wrote, pending_offsets.py).

Plain data plus the rules that need no clock or I/O: which protocol the members agree on,
whether a joining member's protocols fit the group, who leads. Timers, waiting requests and
persistence belong to the coordinator.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from wire.error_codes import ErrorCode
from broker.coordinator.clock import TimerHandle
from broker.groups.committed_offset import CommittedOffset, UnreplicatedOffsets
from broker.groups.pending_offsets import PendingTxnOffsets
from broker.groups.state import GroupState


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's order of preference
    assignment: bytes = b""
    join_waiter: asyncio.Future | None = None  # its JoinGroup, parked until the join phase ends
    sync_waiter: asyncio.Future | None = None  # its SyncGroup, parked until the leader's arrives
    expiry: TimerHandle | None = None  # session timeout

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def cancel_expiry(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # in join order
    pending_members: set[str] = field(default_factory=set)  # ids handed out by MEMBER_ID_REQUIRED
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    pending_txn_offsets: PendingTxnOffsets = field(default_factory=PendingTxnOffsets)
    unreplicated: UnreplicatedOffsets = field(default_factory=UnreplicatedOffsets)  # what OffsetFetch must not see yet
    state_timestamp: int = -1
    join_timer: TimerHandle | None = None
    join_deadline_ms: int = 0  # the clock's time the initial delayed join may extend to
    sync_timer: TimerHandle | None = None

    def member_by_instance(self, instance_id: str) -> Member | None:
        for member in self.members.values():
            if member.group_instance_id == instance_id:
                return member
        return None

    def is_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member id that no longer owns its group.instance.id (FENCED_INSTANCE_ID)."""
        if instance_id is None:
            return False
        current = self.member_by_instance(instance_id)
        return current is not None and current.member_id != member_id

    def validate_member(self, member_id: str, instance_id: str | None,
                        generation: int) -> tuple[Member | None, ErrorCode | None]:
        """The member a SyncGroup or Heartbeat names, and the error that refuses it (or None)."""
        if self.state is GroupState.DEAD:
            return None, ErrorCode.coordinator_not_available
        if self.is_fenced(member_id, instance_id):
            return None, ErrorCode.fenced_instance_id
        member = self.members.get(member_id)
        if member is None:
            return None, ErrorCode.unknown_member_id
        if generation != self.generation:
            return member, ErrorCode.illegal_generation
        return member, None

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """Kafka's rule: an empty group takes any non-empty protocol list; otherwise the type must
        match and at least one protocol must be one every current member also supports."""
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        return protocol_type == self.protocol_type and bool(self._common_protocols() & set(names))

    def _common_protocols(self) -> set[str]:
        common: set[str] | None = None
        for member in self.members.values():
            names = {name for name, _ in member.protocols}
            common = names if common is None else common & names
        return common or set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that all members support."""
        candidates = self._common_protocols()
        votes = Counter()
        for member in self.members.values():
            votes[next(name for name, _ in member.protocols if name in candidates)] += 1
        return votes.most_common(1)[0][0]

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
