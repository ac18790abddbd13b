"""Share sessions (KIP-932): what a member fetches from this broker, built up across ShareFetch
requests, and the epoch that orders them. Pure logic.

A session is one member's of one group. ShareFetch with epoch 0 opens it (replacing one the member
had), naming partitions; later requests carry the next epoch (1, 2, ... wrapping to 1 after
2^31-1), add partitions in `topics` and drop those in `forgotten_topics_data`, and fetch from every
partition the session holds. Epoch -1 closes it: the member's acquired records are then released
by the caller. ShareAcknowledge never opens a session. Kafka's errors: no session for a non-zero
epoch is SHARE_SESSION_NOT_FOUND, a wrong epoch INVALID_SHARE_SESSION_EPOCH.

A session belongs to the client connection that opened it, as in Kafka's ShareSessionCache: when
that connection closes (the client closed it, or died and its kernel closed its sockets), the
sessions it opened end, and the caller releases their members' records at once rather than when
their locks run out. A member that opened its session again on another connection (it
reconnected) keeps it when the old connection's close is noticed.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field

from wire.error_codes import ErrorCode

OPEN_EPOCH, CLOSE_EPOCH = 0, -1
_MAX_EPOCH = 2**31 - 1

TopicPartition = tuple[uuid.UUID, int]
SessionKey = tuple[str, str]  # group id, member id


class SessionRefused(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    connection: Hashable | None = None  # the connection that opened it; None: none to follow
    next_epoch: int = 1
    partitions: list[TopicPartition] = field(default_factory=list)  # in the order they were added

    def update(self, added: list[TopicPartition], forgotten: list[TopicPartition]) -> None:
        gone = set(forgotten)
        self.partitions = [tp for tp in self.partitions if tp not in gone]
        held = set(self.partitions)
        for tp in added:
            if tp not in held and tp not in gone:
                self.partitions.append(tp)
                held.add(tp)


class ShareSessions:
    def __init__(self) -> None:
        self._sessions: dict[SessionKey, ShareSession] = {}
        self._opened_on: dict[Hashable, set[SessionKey]] = {}  # connection -> the sessions it opened

    def for_fetch(self, group_id: str, member_id: str, epoch: int,
                  connection: Hashable | None = None) -> ShareSession:
        """The session a ShareFetch with this epoch works on (a new one for epoch 0, opened on
        `connection`; for -1 the one being closed, which the caller removes with close())."""
        if epoch == OPEN_EPOCH:
            self.close(group_id, member_id)
            session = self._sessions[(group_id, member_id)] = ShareSession(group_id, member_id, connection)
            if connection is not None:
                self._opened_on.setdefault(connection, set()).add((group_id, member_id))
            return session
        return self._next(group_id, member_id, epoch)

    def for_acknowledge(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        if epoch == OPEN_EPOCH:
            raise SessionRefused(ErrorCode.invalid_share_session_epoch, "ShareAcknowledge cannot open a share session.")
        return self._next(group_id, member_id, epoch)

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        session = self._sessions.pop((group_id, member_id), None)
        if session is not None and session.connection is not None:
            opened = self._opened_on[session.connection]
            opened.discard((group_id, member_id))
            if not opened:
                del self._opened_on[session.connection]
        return session

    def close_connection(self, connection: Hashable) -> list[ShareSession]:
        """The connection closed: the sessions it opened (and no other has opened again since)
        end; returns them, whose members' records the caller releases."""
        return [self._sessions.pop(key) for key in self._opened_on.pop(connection, ())]

    def of_group(self, group_id: str) -> list[ShareSession]:
        return [s for (g, _), s in self._sessions.items() if g == group_id]

    def _next(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise SessionRefused(ErrorCode.share_session_not_found, f"No share session for member {member_id} "
                                 f"of group {group_id}.")
        if epoch == CLOSE_EPOCH:
            return session
        if epoch != session.next_epoch:
            raise SessionRefused(ErrorCode.invalid_share_session_epoch, f"Share session epoch {epoch}, expected "
                                 f"{session.next_epoch}.")
        session.next_epoch = 1 if epoch == _MAX_EPOCH else epoch + 1
        return session
