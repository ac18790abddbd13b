"""A share group's members and what each is assigned (KIP-932), as ShareGroupHeartbeat changes them.
Pure logic: the coordinator (share_coordinator.py) owns timers and the broker's topics, and works
a change out here before its records (share_group_changes.py) are replayed into the group
(share_group_replay.py), the only way a group changes for good.

Share groups have no revocation step: partitions may be shared by several members (the records in
them are handed out one by one, share_partition.py), so a member takes its new assignment at the
heartbeat after the group epoch moved, and its member epoch becomes the group's. The group epoch
moves when a member joins or leaves, a subscription changes, or a subscribed topic's partition
count does; the assignment is computed again then (simple_assignor.py, Kafka's for share groups).
A member whose answer was lost comes back at its previous epoch, which Kafka accepts, and gets
its assignment again.

What the assignor saw of the topics is kept as a hash (the metadata hash of Kafka's
ShareGroupMetadata record): the group's records hold it, not the topics, so a coordinator that
replayed them tells a change made meanwhile from none at the next heartbeat.

What records hold and what only memory does: the group's epoch and metadata hash (record 11), its
assignment epoch (12), targets (13) and the share-partitions that may have state (15); each
member, its rack, client and subscription (10), its epochs and assignment (14). In memory only,
as in Kafka: a member's `sent` (what its last answer carried) and the group's `topics` (what the
last change worked out saw of the subscribed topics, resolved again by every change); a group
its records made has neither until its next heartbeat. Sessions and timers are the coordinator's.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Mapping

from wire.error_codes import ErrorCode
from broker.groups.share.share_group_records import StatePartitions
from broker.groups.share.simple_assignor import Assignment, assign

TopicSizes = Mapping[str, tuple[uuid.UUID, int]]  # the broker's topics: name -> (topic id, partition count)

LEAVE_EPOCH = -1
EMPTY, STABLE = "Empty", "Stable"  # Kafka's ShareGroupState names


class ChangeRefused(Exception):
    """A change the group refuses (a heartbeat's, an admin's): the error its caller answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed: tuple[str, ...] = ()
    epoch: int = 0
    previous_epoch: int = 0  # accepted too: the answer that moved the member on may have been lost
    assignment: Assignment = field(default_factory=dict)
    sent: Assignment | None = None  # in memory only: the assignment last sent to it; None: never (or lost)


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0  # of the subscribed topics the assignment was last computed for
    members: dict[str, ShareMember] = field(default_factory=dict)
    # Subscribed, as the last change worked out saw them (in memory only): name -> (id, partitions)
    topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    # The share-partitions that may have state: ever assigned, or altered by an admin, and not
    # deleted since (share_group_records.py); the admin asks the share coordinator about these.
    state_partitions: StatePartitions = field(default_factory=dict)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def join_or_heartbeat(self, member_id: str, member_epoch: int, subscribed: tuple[str, ...] | None,
                          rack_id: str | None, client_id: str, client_host: str, topics: TopicSizes) -> ShareMember:
        """The member after this heartbeat, its epoch and assignment brought up to the group's.
        `topics`: the broker's topics now, name -> (topic id, partition count)."""
        member = self.members.get(member_id)
        if member_epoch == 0:
            if not subscribed:
                raise ChangeRefused(ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
            if member is None:
                member = self.members[member_id] = ShareMember(member_id, client_id, client_host)
                self.epoch += 1
            member.sent = None  # a (re)join is answered with the whole assignment
        elif member is None:
            raise ChangeRefused(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of share group "
                                f"{self.group_id}.")
        elif member_epoch > member.epoch:
            raise ChangeRefused(ErrorCode.fenced_member_epoch, f"The share group member has a greater member epoch "
                                f"({member_epoch}) than the one known by the group coordinator ({member.epoch}). "
                                "The member must abandon all its partitions and rejoin.")
        elif member_epoch < member.epoch:
            if member_epoch != member.previous_epoch:
                raise ChangeRefused(ErrorCode.fenced_member_epoch, f"The share group member has a smaller member epoch "
                                    f"({member_epoch}) than the one known by the group coordinator "
                                    f"({member.epoch}), and it does not match the previous member epoch "
                                    f"({member.previous_epoch}). The member must abandon all its partitions "
                                    "and rejoin.")
            member.sent = None  # the answer that moved it on was lost: it gets its assignment again
        member.client_id, member.client_host = client_id, client_host
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and tuple(sorted(set(subscribed))) != member.subscribed:
            member.subscribed = tuple(sorted(set(subscribed)))
            self.epoch += 1
        self._refresh(topics)
        if member.epoch != self.epoch:
            member.previous_epoch, member.epoch = member.epoch, self.epoch
        member.assignment = self.targets.get(member_id, {})
        return member

    def leave(self, member_id: str, topics: TopicSizes) -> ShareMember:
        member = self.members.pop(member_id, None)
        if member is None:
            raise ChangeRefused(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of share group "
                                f"{self.group_id}.")
        self.epoch += 1
        self._refresh(topics)
        return member

    def note_state_partitions(self, partitions: StatePartitions) -> bool:
        """Adds these share-partitions to those that may have state; whether any was new."""
        grew = False
        for topic_id, (name, indexes) in partitions.items():
            _name, kept = self.state_partitions.get(topic_id, (name, frozenset()))
            if not indexes <= kept:
                self.state_partitions[topic_id] = (name, kept | indexes)
                grew = True
        return grew

    def assigned_partitions(self) -> StatePartitions:
        """Every share-partition the current assignment hands to some member."""
        names = {topic_id: name for name, (topic_id, _count) in self.topics.items()}
        found: dict[uuid.UUID, frozenset[int]] = {}
        for assignment in self.targets.values():
            for topic_id, indexes in assignment.items():
                if topic_id in names:
                    found[topic_id] = found.get(topic_id, frozenset()) | indexes
        return {topic_id: (names[topic_id], indexes) for topic_id, indexes in found.items()}

    def _refresh(self, topics: TopicSizes) -> None:
        """Subscribed topics as they are now; a new assignment if the group epoch moved."""
        wanted = {name for m in self.members.values() for name in m.subscribed}
        self.topics = {name: topics[name] for name in sorted(wanted) if name in topics}
        topics_hash = metadata_hash(self.topics)
        if topics_hash != self.metadata_hash:
            self.metadata_hash = topics_hash
            self.epoch += 1
        if self.epoch > self.assignment_epoch:
            subscriptions = {mid: {self.topics[n][0] for n in m.subscribed if n in self.topics}
                             for mid, m in self.members.items()}
            self.targets = assign(subscriptions, {tid: count for tid, count in self.topics.values()})
            self.assignment_epoch = self.epoch


def metadata_hash(topics: dict[str, tuple[uuid.UUID, int]]) -> int:
    """A signed 64-bit hash of the subscribed topics (name, id, partition count); 0 for none, as
    Kafka's. Not Kafka's function (nothing else reads it): it only has to be the same on every
    broker and after a restart, so it is a digest, not Python's seeded hash()."""
    if not topics:
        return 0
    text = "\n".join(f"{name}\t{topic_id}\t{count}" for name, (topic_id, count) in sorted(topics.items()))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)
