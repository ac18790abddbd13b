"""The share-group coordinator: ShareGroupHeartbeat, members' sessions, and what happens when a
member goes (its share sessions closed, its acquired records released and the release written).

Membership is kept in memory: after a restart a member's heartbeat is answered UNKNOWN_MEMBER_ID
and the Java client joins again under the same member id (ShareGroupHeartbeat v1: the member
names itself). What must survive a restart, which records are done with, is the share-partitions'
state (share_partitions.py, kept in `__share_group_state`: state_persister.py). A group id taken by a classic or consumer group is
not a share group (GROUP_ID_NOT_FOUND, as Kafka answers).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from broker.groups.share.share_group import LEAVE_EPOCH, HeartbeatRefused, ShareGroup, ShareMember
from broker.groups.share.share_partitions import SharePartitions
from broker.groups.share.state_persister import ShareStateUnavailable
from broker.groups.share.share_sessions import ShareSessions
from broker.groups.share.simple_assignor import Assignment

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShareHeartbeatResult:
    error: str = "none"
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged since the last answer


class ShareGroupCoordinator:
    def __init__(self, partitions: SharePartitions, topics, other_group_kind, coordinator_error) -> None:
        """`topics()`: the broker's topics by name; `other_group_kind(group_id)`: "classic" or
        "consumer" when that id is taken by such a group, else None; `coordinator_error(group_id)`:
        NOT_COORDINATOR when another broker coordinates it."""
        self.groups: dict[str, ShareGroup] = {}
        self.sessions = ShareSessions()
        self.partitions = partitions
        self.settings = partitions.settings
        self._topics = topics
        self._other_group_kind = other_group_kind
        self._coordinator_error = coordinator_error
        self._expiry: dict[tuple[str, str], asyncio.TimerHandle] = {}

    def topics_now(self) -> dict:
        return {t.name: (t.topic_id, len(t.partitions)) for t in list(self._topics().values())}

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, subscribed: tuple[str, ...] | None,
                        rack_id: str | None, client_id: str, client_host: str) -> ShareHeartbeatResult:
        if not group_id:
            return ShareHeartbeatResult("invalid_group_id", "GroupId can't be empty.")
        if not member_id:
            return ShareHeartbeatResult("invalid_request", "MemberId can't be empty.")
        if member_epoch < LEAVE_EPOCH:
            return ShareHeartbeatResult("invalid_request", f"MemberEpoch {member_epoch} is invalid.")
        not_here = self._coordinator_error(group_id)
        if not_here:
            return ShareHeartbeatResult(not_here)
        if self._other_group_kind(group_id):
            return ShareHeartbeatResult("group_id_not_found", f"Group {group_id} is not a share group.")
        group = self.groups.get(group_id)
        if group is None:
            if member_epoch != 0:
                return ShareHeartbeatResult("unknown_member_id", f"Member {member_id} is not a member of "
                                            f"share group {group_id}.")
            group = self.groups[group_id] = ShareGroup(group_id)
        try:
            if member_epoch == LEAVE_EPOCH:
                group.leave(member_id, self.topics_now())
                await self.member_gone(group_id, member_id, "left")
                return ShareHeartbeatResult(member_id=member_id, member_epoch=LEAVE_EPOCH)
            member = group.join_or_heartbeat(member_id, member_epoch, subscribed, rack_id, client_id, client_host,
                                             self.topics_now())
        except HeartbeatRefused as exc:
            return ShareHeartbeatResult(exc.error, exc.message)
        self._arm_session(group, member)
        send = member.assignment if member.sent != member.assignment else None
        member.sent = member.assignment
        return ShareHeartbeatResult(member_id=member_id, member_epoch=member.epoch,
                                    heartbeat_interval_ms=self.settings.heartbeat_interval_ms, assignment=send)

    def is_unknown_member(self, group_id: str, member_id: str) -> bool:
        """Whether this broker coordinates the group and it has no such member. A share-partition
        led here may belong to a group another broker coordinates: its members are not known
        here, and a share session opens for them as Kafka's partition leaders open one."""
        if self._coordinator_error(group_id):
            return False
        group = self.groups.get(group_id)
        return group is None or member_id not in group.members

    async def member_gone(self, group_id: str, member_id: str, why: str) -> None:
        """A member left or expired: its sessions end and its records come back."""
        log.info("share group %s: member %s %s", group_id, member_id, why)
        timer = self._expiry.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()
        self.sessions.close(group_id, member_id)
        await self.release(group_id, member_id)

    async def release(self, group_id: str, member_id: str, keys=None) -> None:
        """The member's records back to Available, stored; then the group's share-partitions no
        session here fetches from any more are dropped (share_partitions.drop_idle)."""
        for key in self.partitions.release_member(group_id, member_id, keys):
            try:
                await self.partitions.persist(key)
            except ShareStateUnavailable as exc:  # the locks are gone anyway: what a restart finds is a count kept
                log.error("share group %s: writing the state of %s failed: %s", group_id, key, exc)
        fetched = {(group_id, topic_id, index) for session in self.sessions.of_group(group_id)
                   for topic_id, index in session.partitions}
        self.partitions.drop_idle(group_id, fetched)

    def _arm_session(self, group: ShareGroup, member: ShareMember) -> None:
        key = (group.group_id, member.member_id)
        timer = self._expiry.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._expiry[key] = asyncio.get_running_loop().call_later(
            self.settings.session_timeout_ms / 1000, lambda: asyncio.ensure_future(self._expire(group, member)))

    async def _expire(self, group: ShareGroup, member: ShareMember) -> None:
        self._expiry.pop((group.group_id, member.member_id), None)
        if self.groups.get(group.group_id) is not group or group.members.get(member.member_id) is not member:
            return
        group.leave(member.member_id, self.topics_now())
        await self.member_gone(group.group_id, member.member_id, "expired: session timed out")

    def close(self) -> None:
        for timer in self._expiry.values():
            timer.cancel()
        self._expiry.clear()
