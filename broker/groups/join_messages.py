"""What a JoinGroup asks and what it is answered, and how parked requests are answered.

A JoinGroup request may park until the join phase ends, and a SyncGroup until the leader's
assignment is stored; both hold a future on their member (group.Member). The coordinator
resolves those futures with the values built here, so the handlers see one answer shape
whether the request was answered at once or after a rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wire.error_codes import ErrorCode
from broker.groups.group import Group, Member


@dataclass
class JoinResult:
    error: ErrorCode
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    require_known_member: bool  # JoinGroup v4+: a new member first gets MEMBER_ID_REQUIRED


def join_result(group: Group, member: Member) -> JoinResult:
    """The answer of a completed join phase: only the leader is told every member's metadata."""
    members = []
    if member.member_id == group.leader_id:
        members = [(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                   for m in group.members.values()]
    return JoinResult(ErrorCode.none, member.member_id, group.generation, group.protocol_type,
                      group.protocol_name, group.leader_id or "", members)


def answer_waiters(member: Member, code: ErrorCode) -> None:
    """A member's parked JoinGroup / SyncGroup, if any, gets `code`."""
    for attr in ("join_waiter", "sync_waiter"):
        waiter = getattr(member, attr)
        setattr(member, attr, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(JoinResult(code, member.member_id) if attr == "join_waiter" else (code, b""))
