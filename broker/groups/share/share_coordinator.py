"""The share-group coordinator: ShareGroupHeartbeat, members' sessions, and what happens when a
member goes (its share sessions closed, its acquired records released and the release written).

A member goes from a share-partition's leader, which need not coordinate its group, as it goes in
Kafka: the client closes its share session there (ShareFetch or ShareAcknowledge at epoch -1)
before it leaves, and a client that dies loses its connections, which end the sessions they
opened (connection_closed). The coordinator's own leave or session-timeout releases only the
share-partitions loaded here; no broker tells another.

The group is written to `__consumer_offsets` in Kafka's records (share_group_records.py): its
epoch, its members, their target and current assignments, and which share-partitions may have
state, each record when what it says changes (share_group_changes.py). A change (a heartbeat's, a
session timeout's, an admin's: `change`) is worked out on the group, then the group is put back
(share_group_snapshot.py): what changed is the records, which the coordinator runtime replays
into the group (share_group_replay.py) in its `__consumer_offsets` partition's turn and writes
there (group_writes.py), as Kafka's coordinator replays a share group's records; the answer waits
until they are stored (acks=-1). A write that fails with nothing appended leaves the group as the
log holds it (the runtime's undo log), one that timed out after the log appended it keeps what
the log has, and the member gets the runtime's coordinator error; either way every member the
group holds has a session. So what a share group holds is what its records say. A group's
changes go one at a time (`_GroupWrites`), each worked out on the group as the one before it left
it; a heartbeat that changes nothing writes nothing and, with none of its group's writes waiting,
does not queue. Different groups write concurrently, each in its partition's queue (the runtime
orders them there), so a write waiting for a slow follower of one partition holds no group of
another, as in Kafka. A restart or a coordinator move replays them (share_group_replay.py), so a
member heartbeating the new coordinator at its epoch goes on with its assignment, no rebalance,
and one that does not come back is fenced at its session timeout, its records tombstoned, as
in Kafka; an idle group is still there. Which records are done with is the share-partitions'
state (share_partitions.py, kept in `__share_group_state`: state_persister.py). A group id taken
by a classic, consumer or streams group is not a share group (GROUP_ID_NOT_FOUND, as Kafka answers).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from wire.error_codes import ErrorCode

from broker.groups.group_timers import GroupTimer, GroupTimers
from broker.groups.share.share_group_changes import GROUP_RECORDS, Said, records_between, said_by
from broker.groups.share.share_group import LEAVE_EPOCH, ChangeRefused, ShareGroup, ShareMember
from broker.groups.share.share_group_snapshot import ShareGroupSnapshot
from broker.groups.share.share_partitions import SharePartitions
from broker.groups.share.state_persister import ShareStateUnavailable
from broker.groups.share.share_sessions import ShareSessions
from broker.groups.share.simple_assignor import Assignment

log = logging.getLogger(__name__)
T = TypeVar("T")

@dataclass(frozen=True)
class ShareHeartbeatResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged since the last answer


@dataclass(eq=False)
class _GroupWrites:
    """One group's changes that write: one at a time, each worked out and written in its turn, and
    how many wait for or hold the turn (the entry goes with the last of them)."""

    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0


class ShareGroupCoordinator:
    def __init__(self, partitions: SharePartitions, store, topics, other_group_kind, coordinator_error,
                 timers: GroupTimers) -> None:
        """`store`: the OffsetsStore the group's records go to; `topics()`: the broker's topics by
        name; `other_group_kind(group_id)`: "classic", "consumer" or "streams" when that id is taken by such
        a group, else None; `coordinator_error(group_id)`: NOT_COORDINATOR when another broker
        coordinates it; `timers`: the groups' clock and timers (group_timers.py)."""
        self.groups: dict[str, ShareGroup] = {}
        self._store = store
        self._writing: dict[str, _GroupWrites] = {}  # per group with a change waiting or being written
        self.sessions = ShareSessions()
        self.partitions = partitions
        self._topics = topics
        self._other_group_kind = other_group_kind
        self._coordinator_error = coordinator_error
        self._timers = timers
        self._expiry: dict[tuple[str, str], GroupTimer] = {}
        self._storing: set[asyncio.Task] = set()  # releases of closed connections' members, being written
        self._closed = False

    def topics_now(self) -> dict:
        return {t.name: (t.topic_id, len(t.partitions)) for t in list(self._topics().values())}

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, subscribed: tuple[str, ...] | None,
                        rack_id: str | None, client_id: str, client_host: str) -> ShareHeartbeatResult:
        if not group_id:
            return ShareHeartbeatResult(ErrorCode.invalid_group_id, "GroupId can't be empty.")
        if not member_id:
            return ShareHeartbeatResult(ErrorCode.invalid_request, "MemberId can't be empty.")
        if member_epoch < LEAVE_EPOCH:
            return ShareHeartbeatResult(ErrorCode.invalid_request, f"MemberEpoch {member_epoch} is invalid.")
        not_here = self._coordinator_error(group_id)
        if not_here:
            return ShareHeartbeatResult(not_here)
        if self._other_group_kind(group_id):
            return ShareHeartbeatResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
        if member_epoch == LEAVE_EPOCH:
            return await self._leave(group_id, member_id)

        def join_or_heartbeat(group: ShareGroup) -> None:
            group.join_or_heartbeat(member_id, member_epoch, subscribed, rack_id, client_id, client_host,
                                    self.topics_now())
            group.note_state_partitions(group.assigned_partitions())
        try:
            stored, _ = await self.change(group_id, join_or_heartbeat)  # nothing written when nothing changed
        except ChangeRefused as exc:
            return ShareHeartbeatResult(exc.error, exc.message)
        if stored is not ErrorCode.none:  # the member is not told of a change the log may not hold
            self._rearm(group_id)  # a member the log appended anyway is fenced if it does not come back
            return ShareHeartbeatResult(stored, f"Writing share group {group_id} failed: {stored.name}.")
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:  # unloaded as its write ended: another broker coordinates it
            return ShareHeartbeatResult(ErrorCode.not_coordinator)
        self._arm_session(group, member)
        send = member.assignment if member.sent != member.assignment else None
        member.sent = member.assignment
        return ShareHeartbeatResult(member_id=member_id, member_epoch=member.epoch,
                                    heartbeat_interval_ms=self.partitions.config_of(group_id).heartbeat_interval_ms,
                                    assignment=send)

    async def _leave(self, group_id: str, member_id: str) -> ShareHeartbeatResult:
        try:
            stored, _ = await self.change(group_id, lambda group: group.leave(member_id, self.topics_now()))
        except ChangeRefused as exc:
            return ShareHeartbeatResult(exc.error, exc.message)
        await self.member_gone(group_id, member_id, "left")  # it goes from its sessions anyway
        if stored is not ErrorCode.none:
            self._rearm(group_id)  # still a member if the log holds it so: fenced at its session timeout
            return ShareHeartbeatResult(stored, f"Writing share group {group_id} failed: {stored.name}.")
        return ShareHeartbeatResult(member_id=member_id, member_epoch=LEAVE_EPOCH)

    async def change(self, group_id: str, work: Callable[[ShareGroup], T], must_exist: bool = False,
                     deleting: bool = False) -> tuple[ErrorCode, T]:
        """(the write's error, ErrorCode.none once stored; what `work` returned): `work` changes the
        group (a new one unless `must_exist`) and may raise ChangeRefused, which passes on; the
        group is put back and the records of the change (`deleting`: the group's tombstones) are
        written (acks=-1) and replayed into it by the runtime. Nothing is written, nor queued
        behind another write, when nothing changed."""
        writes = self._writing.get(group_id)
        worked: tuple[T, list[tuple[bytes, bytes | None]]] | None = None
        if writes is None:  # none of this group's writes waits or is in flight: it is what its log holds
            worked = self._worked_out(group_id, work, must_exist, deleting)
            if not worked[1]:
                return ErrorCode.none, worked[0]
        writes = self._writing.setdefault(group_id, _GroupWrites())
        writes.waiting += 1
        try:
            async with writes.turn:  # taken at once (no other waits for it) when worked out above
                if worked is None:  # worked out on the group as the writes before this one left it
                    worked = self._worked_out(group_id, work, must_exist, deleting)
                result, records = worked
                stored = await self._store.writes.write(group_id, records)
        finally:
            writes.waiting -= 1
            if not writes.waiting:
                del self._writing[group_id]
        if stored is not ErrorCode.none:
            log.warning("share group %s: writing its records failed: %s", group_id, stored.name)
        return stored, result

    def _worked_out(self, group_id: str, work: Callable[[ShareGroup], T], must_exist: bool,
                    deleting: bool) -> tuple[T, list[tuple[bytes, bytes | None]]]:
        """What `work` returned and the records of its change; the group is left as it was."""
        not_here = self._coordinator_error(group_id)
        if not_here:  # unloaded while this change waited
            raise ChangeRefused(not_here, f"Group {group_id} is coordinated by another broker.")
        group = self.groups.get(group_id)
        if group is None:
            if must_exist:
                raise ChangeRefused(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
            held: Said = {}
            group = ShareGroup(group_id)  # its records make it in self.groups
            result = work(group)
            wanted = {} if deleting else said_by(group)
        else:
            held, saved = said_by(group), ShareGroupSnapshot(group)
            try:
                result = work(group)
                wanted = {} if deleting else said_by(group)
            finally:
                saved.restore(group)  # the records say what changed: the runtime replays them into it
        if deleting:  # whatever this broker knew, the group's own records go
            held = {**dict.fromkeys(GROUP_RECORDS), **held}
        return result, records_between(group_id, held, wanted, self._timers.now_ms())

    def restored(self, group_ids: set[str]) -> None:
        """These groups were replayed from the log (share_group_replay.py): each member has a
        session from now, as Kafka's onLoaded gives it."""
        for group_id in group_ids:
            self._rearm(group_id)

    def _rearm(self, group_id: str) -> None:
        """A session for each of the group's members without one: replayed by a load, put back
        by a failed write, or one whose write timed out after the log appended it."""
        group = self.groups.get(group_id)
        for member in list(group.members.values()) if group is not None else ():
            if (group_id, member.member_id) not in self._expiry:
                self._arm_session(group, member)

    def unload(self, group_id: str) -> None:
        """Another broker coordinates the group now: forget it here; its records stay in the log."""
        group = self.groups.pop(group_id, None)
        if group is None:
            return
        for member_id in list(group.members):
            timer = self._expiry.pop((group_id, member_id), None)
            if timer is not None:
                timer.cancel()
            self.sessions.close(group_id, member_id)

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

    def connection_closed(self, connection) -> None:
        """A client connection closed (the transport's call, which cannot wait): the share
        sessions it opened end and their members' records are Available again at once, their
        delivery counts kept, as Kafka's leaders do on a disconnect; the release is written in
        the background. A client killed with kill -9 gets here: its kernel closes its sockets.
        Its membership is the group coordinator's, which ends it at the session timeout."""
        if self._closed:  # stopping: the store may be closed; a restart ends every lock anyway
            return
        for session in self.sessions.close_connection(connection):
            log.info("share group %s: member %s's connection closed: its share session ends",
                     session.group_id, session.member_id)
            keys = {(session.group_id, topic_id, index) for topic_id, index in session.partitions}
            changed = self.partitions.release_member(session.group_id, session.member_id, keys)
            task = asyncio.ensure_future(self._store_released(session.group_id, changed))
            self._storing.add(task)
            task.add_done_callback(self._storing.discard)

    async def release(self, group_id: str, member_id: str, keys=None) -> None:
        """The member's records back to Available, stored; then the group's share-partitions no
        session here fetches from any more are dropped (share_partitions.drop_idle)."""
        await self._store_released(group_id, self.partitions.release_member(group_id, member_id, keys))

    async def _store_released(self, group_id: str, changed) -> None:
        for key in changed:
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
        timeout_ms = self.partitions.config_of(group.group_id).session_timeout_ms  # the group's, else the broker's
        self._expiry[key] = self._timers.schedule(group.group_id, timeout_ms, lambda: self._expire(group, member),
                                                  "share session")

    async def _expire(self, group: ShareGroup, member: ShareMember) -> None:
        self._expiry.pop((group.group_id, member.member_id), None)

        def fence(live: ShareGroup) -> None:
            if live is not group or live.members.get(member.member_id) is not member:
                raise ChangeRefused(ErrorCode.unknown_member_id, "gone meanwhile")  # unloaded, left or replaced
            live.leave(member.member_id, self.topics_now())
        try:
            stored, _ = await self.change(group.group_id, fence)
        except ChangeRefused:
            return
        await self.member_gone(group.group_id, member.member_id, "expired: session timed out")
        if stored is not ErrorCode.none:
            self._rearm(group.group_id)  # fenced again at its next session timeout

    def close(self) -> None:
        self._closed = True
        for timer in self._expiry.values():
            timer.cancel()
        self._expiry.clear()
        for task in self._storing:
            task.cancel()
