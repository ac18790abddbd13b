"""The classic consumer-group state machine, as one table.

    Empty ──join──► PreparingRebalance ──join phase ends, members──► CompletingRebalance
      ▲                 │    ▲                                             │
      │  join phase     │    └──── join / leave / expiry ◄─────────────────┤ leader's SyncGroup
      └──ends, nobody───┘    └──── join / leave / expiry ◄──── Stable ◄────┘
    Empty ──DeleteGroups──► Dead (absorbing; the coordinator forgets the group)

Every (state, event) pair has an entry: the next state, and the error a request event gets
in that state (None: served). The coordinator asks `transition` before it acts, so what
Kafka answers where (REBALANCE_IN_PROGRESS to a SyncGroup during the join phase,
UNKNOWN_MEMBER_ID to a heartbeat on an empty group, NON_EMPTY_GROUP to a delete...) lives
here and nowhere else. Member and generation checks come first, in the coordinator: an
event reaches this table only from a member of the current generation (or, for JOIN, from
any client).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from wire.error_codes import ErrorCode


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class Event(enum.Enum):
    JOIN = "a JoinGroup that starts or joins a rebalance"
    JOIN_PHASE_DONE = "every member rejoined, or the rebalance timeout passed; members remain"
    JOIN_PHASE_DONE_EMPTY = "the join phase ended with no member left"
    LEADER_SYNC = "the leader's SyncGroup, carrying the assignment"
    FOLLOWER_SYNC = "a SyncGroup from a member that is not the leader"
    HEARTBEAT = "a Heartbeat"
    MEMBER_GONE = "a member left (LeaveGroup) or its session expired"
    SYNC_TIMEOUT = "the rebalance timeout passed with members still not synced"
    COMMIT = "an OffsetCommit from a member of the current generation"
    DELETE = "DeleteGroups"


class Outcome(NamedTuple):
    next: GroupState
    error: ErrorCode | None  # Kafka's error answered to the request; None: served


E, P, C, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                 GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)


def _ok(state: GroupState) -> Outcome:
    return Outcome(state, None)


def _no(state: GroupState, error: ErrorCode) -> Outcome:
    return Outcome(state, error)


# Events that cannot happen in a state (the join phase ending while none runs) keep the
# state and answer nothing; they are listed so the table is total.
TRANSITIONS: dict[tuple[GroupState, Event], Outcome] = {
    (E, Event.JOIN): _ok(P),
    (E, Event.JOIN_PHASE_DONE): _ok(E),
    (E, Event.JOIN_PHASE_DONE_EMPTY): _ok(E),
    (E, Event.LEADER_SYNC): _no(E, ErrorCode.unknown_member_id),
    (E, Event.FOLLOWER_SYNC): _no(E, ErrorCode.unknown_member_id),
    (E, Event.HEARTBEAT): _no(E, ErrorCode.unknown_member_id),
    (E, Event.MEMBER_GONE): _ok(E),
    (E, Event.SYNC_TIMEOUT): _ok(E),
    (E, Event.COMMIT): _ok(E),
    (E, Event.DELETE): _ok(D),

    (P, Event.JOIN): _ok(P),
    (P, Event.JOIN_PHASE_DONE): _ok(C),
    (P, Event.JOIN_PHASE_DONE_EMPTY): _ok(E),
    (P, Event.LEADER_SYNC): _no(P, ErrorCode.rebalance_in_progress),
    (P, Event.FOLLOWER_SYNC): _no(P, ErrorCode.rebalance_in_progress),
    (P, Event.HEARTBEAT): _no(P, ErrorCode.rebalance_in_progress),
    (P, Event.MEMBER_GONE): _ok(P),
    (P, Event.SYNC_TIMEOUT): _ok(P),
    # Members of the previous generation may commit what they consumed before rejoining.
    (P, Event.COMMIT): _ok(P),
    (P, Event.DELETE): _no(P, ErrorCode.non_empty_group),

    (C, Event.JOIN): _ok(P),
    (C, Event.JOIN_PHASE_DONE): _ok(C),
    (C, Event.JOIN_PHASE_DONE_EMPTY): _ok(C),
    (C, Event.LEADER_SYNC): _ok(S),
    (C, Event.FOLLOWER_SYNC): _ok(C),  # answered when the leader's assignment arrives
    (C, Event.HEARTBEAT): _ok(C),
    (C, Event.MEMBER_GONE): _ok(P),
    (C, Event.SYNC_TIMEOUT): _ok(P),
    (C, Event.COMMIT): _no(C, ErrorCode.rebalance_in_progress),
    (C, Event.DELETE): _no(C, ErrorCode.non_empty_group),

    (S, Event.JOIN): _ok(P),
    (S, Event.JOIN_PHASE_DONE): _ok(S),
    (S, Event.JOIN_PHASE_DONE_EMPTY): _ok(S),
    (S, Event.LEADER_SYNC): _ok(S),  # a repeated SyncGroup gets the stored assignment
    (S, Event.FOLLOWER_SYNC): _ok(S),
    (S, Event.HEARTBEAT): _ok(S),
    (S, Event.MEMBER_GONE): _ok(P),
    (S, Event.SYNC_TIMEOUT): _ok(S),
    (S, Event.COMMIT): _ok(S),
    (S, Event.DELETE): _no(S, ErrorCode.non_empty_group),
}
# A Dead group answers everything with COORDINATOR_NOT_AVAILABLE, as Kafka does while it
# unloads one; the coordinator then forgets it, and the next request starts a new group.
for _event in Event:
    TRANSITIONS[(D, _event)] = _no(D, ErrorCode.group_id_not_found if _event is Event.DELETE
                                   else ErrorCode.coordinator_not_available)


def transition(state: GroupState, event: Event) -> Outcome:
    return TRANSITIONS[(state, event)]
