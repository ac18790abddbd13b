"""The follower's side of an incremental fetch session (KIP-227), Kafka's FetchSessionHandler.

A full Fetch names every partition the fetcher follows. In a session the leader remembers
them, each with the fetch offset, leader epoch and log start it was last sent, so a later
request (incremental) names only the partitions whose fields changed since, plus the ones to
forget; and the leader's answer names only the partitions with news (records, a moved high
watermark or log start, an error). A partition nobody writes to then costs nothing on the
wire, in either direction, round after round.

The session's state on this side, as FetchSessionHandler keeps it:

- no session (id 0, epoch 0): the next request is full and asks for one (epoch 0);
- in session `id` at epoch `n`: the next request is incremental, epoch `n`; its answer, if
  it carries no error, moves the session to `n + 1` and makes the partitions it named the
  session's. A leader that answers a full request with session 0 granted none (its cache
  is full): the next request is full again;
- FETCH_SESSION_ID_NOT_FOUND (the leader restarted, or evicted the session): start over
  with no session; INVALID_FETCH_SESSION_EPOCH, any other error, or a failed connection
  (an answer that never came leaves the two sides' epochs unknown): the next request is
  full, in the same session id at epoch 0, which closes the old session and opens a new
  one.

A session carries one request at a time. The fetcher sends one per round; a fetch made while
another is out goes outside the session (epoch -1), a full request the session never sees.

Partitions the leader leaves out of an incremental answer are UNCHANGED for the fetcher; a
session error answers no partition at all: every partition is UNCHANGED and the next round
asks again, full, at once (Kafka's fetcher does not back off on it either).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Protocol

from wire.error_codes import ErrorCode


class FetchPartition(Protocol):
    """A partition as a fetch asks for it (leader_endpoint.FetchPartition): compared whole to
    what the leader holds, so a changed offset, epoch or log start is sent again."""

    @property
    def tp(self) -> Hashable: ...


TopicPartition = Hashable

NO_SESSION = 0  # Kafka's INVALID_SESSION_ID
INITIAL_EPOCH = 0  # a full request that opens a session
FINAL_EPOCH = -1  # a full request outside any session
_MAX_EPOCH = 2**31 - 1
SESSION_ERRORS = frozenset({ErrorCode.fetch_session_id_not_found, ErrorCode.invalid_fetch_session_epoch})


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """One round's request in the session: what to send, and what it makes the session."""

    session_id: int
    epoch: int
    send: list[FetchPartition]
    forgotten: list[TopicPartition]
    partitions: dict[TopicPartition, FetchPartition]  # the session's partitions once answered

    @property
    def incremental(self) -> bool:
        return self.epoch > INITIAL_EPOCH

    @property
    def in_session(self) -> bool:
        return self.epoch != FINAL_EPOCH


def sessionless(partitions: list[FetchPartition]) -> SessionRequest:
    """A full request outside the session: for a fetch sent while the session's own request
    is out (a session has one request at a time; its epochs count them)."""
    return SessionRequest(NO_SESSION, FINAL_EPOCH, list(partitions), [], {})


class FollowerFetchSession:
    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._partitions: dict[TopicPartition, FetchPartition] = {}  # as the leader holds them

    def next_request(self, partitions: list[FetchPartition]) -> SessionRequest:
        """The request for this round's partitions: all of them when the session is new,
        else those that differ from what the leader holds, and the ones it holds no more."""
        wanted = {p.tp: p for p in partitions}
        if self.epoch == INITIAL_EPOCH:
            return SessionRequest(self.session_id, INITIAL_EPOCH, list(partitions), [], wanted)
        held = self._partitions
        send = [p for p in partitions if held.get(p.tp) != p]
        forgotten = [tp for tp in held if tp not in wanted]
        return SessionRequest(self.session_id, self.epoch, send, forgotten, wanted)

    def answered(self, request: SessionRequest, error: ErrorCode, session_id: int) -> None:
        """The leader answered `request` with this top-level error and session id."""
        if error is ErrorCode.fetch_session_id_not_found:
            self._restart(NO_SESSION)
        elif error is not ErrorCode.none:
            self._restart(self.session_id)
        elif session_id == NO_SESSION:  # none granted (or the leader closed it): full requests
            self._restart(NO_SESSION)
        else:
            if request.incremental and session_id != self.session_id:
                self._restart(NO_SESSION)  # not the session asked about: trust nothing of it
                return
            self.session_id = session_id
            self.epoch = request.epoch + 1 if request.epoch < _MAX_EPOCH else 1
            self._partitions = request.partitions

    def failed(self) -> None:
        """No answer came: whether the leader counted the request is unknown."""
        self._restart(self.session_id)

    def _restart(self, session_id: int) -> None:
        self.session_id = session_id
        self.epoch = INITIAL_EPOCH
        self._partitions = {}
