"""Incremental fetch sessions (KIP-227) for the followers that fetch from this broker: Kafka's
FetchSessionCache and FetchManager.newContext, for followers only.

A follower fetching a thousand partitions names all of them in every Fetch, and the answer
names all of them back, though in a round only a few have changed. In a session the leader
keeps each partition's request (fetch offset, epoch, max bytes) and what it last told the
follower (high watermark, last stable offset, log start), so the follower's next request
names only what changed and the answer only the partitions with news. The leader still reads
every partition of the session each round: that read is what counts a follower as caught up
(replica.lag.time.max.ms), as Kafka's leader does with its session's partitions.

What a request's session id and epoch mean, as Kafka has them:

    epoch -1 (FINAL)       no session: a full request, answered in full with session 0 (a
                           session id with it closes that session)
    epoch 0 (INITIAL)      a full request that asks for a session (closing the one named, if
                           any): answered in full, with the new session's id, whose next
                           request is epoch 1; session 0 when none is granted (a consumer, or
                           max.incremental.fetch.session.cache.slots is 0)
    epoch n > 0            an incremental request in session `id`: FETCH_SESSION_ID_NOT_FOUND
                           if this broker has no such session of that follower (restarted,
                           evicted); INVALID_FETCH_SESSION_EPOCH if the session expects
                           another epoch; else its partitions are updated (then the forgotten
                           ones dropped) and the epoch moves on

Only followers get sessions (a broker may decline one, KIP-227): consumers' fetches keep the
behaviour they had, full requests answered with session 0. The cache holds at most
max.incremental.fetch.session.cache.slots sessions (Kafka's default 1000); a new one evicts
the least recently used. An answered partition with records goes to the end of its session,
so under the response's max_bytes the others get their turn (Kafka does the same).
"""

from __future__ import annotations

import random
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from wire.error_codes import ErrorCode

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
NO_SESSION = 0
_MAX_EPOCH = 2**31 - 1

PartitionKey = tuple[str | uuid.UUID, int]  # (topic name, or topic id from v13, partition index)


@dataclass(slots=True)
class _SessionPartition:
    request: object  # the partition's latest request: fetch offset, epoch, partition max bytes
    high_watermark: int | None = None  # None: never answered in this session
    last_stable_offset: int | None = None
    log_start_offset: int | None = None


@dataclass(slots=True)
class FetchSession:
    id: int
    replica_id: int
    epoch: int  # the epoch its next request must carry
    partitions: dict[PartitionKey, _SessionPartition] = field(default_factory=dict)  # in fetch order


class FetchContext:
    """One request's view of its session: which partitions to read, and which to answer."""

    def __init__(self, session: FetchSession | None, incremental: bool,
                 partitions: dict[PartitionKey, object]) -> None:
        self.session = session
        self.incremental = incremental
        self.partitions = partitions  # key -> partition request, for every partition to read

    @property
    def session_id(self) -> int:
        return self.session.id if self.session is not None else NO_SESSION

    def answers(self, key: PartitionKey, code: ErrorCode, high_watermark: int, last_stable_offset: int,
                log_start_offset: int, has_records: bool) -> bool:
        """Whether the response names this partition (always, outside an incremental
        request); the session remembers what it was told."""
        if self.session is None:
            return True
        held = self.session.partitions.get(key)
        if held is None:  # forgotten by a newer request of the session while this one waited
            return not self.incremental
        changed = (has_records or code is not ErrorCode.none or held.high_watermark != high_watermark
                   or held.last_stable_offset != last_stable_offset or held.log_start_offset != log_start_offset)
        held.high_watermark, held.last_stable_offset, held.log_start_offset = \
            high_watermark, last_stable_offset, log_start_offset
        if has_records:  # to the end: the partitions after it are read first next time
            del self.session.partitions[key]
            self.session.partitions[key] = held
        return changed or not self.incremental


class FetchSessionCache:
    def __init__(self, slots: int) -> None:
        self._slots = slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first

    def __len__(self) -> int:
        return len(self._sessions)

    def context(self, request: Any, replica_id: int, requested: dict[PartitionKey, object],
                forgotten: list[PartitionKey]) -> FetchContext | ErrorCode:
        """The context of one Fetch (`requested`: its partitions, each once, in request
        order), or the Kafka error that answers it."""
        session_id = getattr(request, "session_id", NO_SESSION)  # v4-v6 have no sessions
        epoch = getattr(request, "session_epoch", FINAL_EPOCH)
        if replica_id < 0:  # consumers get no session: one they name was never granted here
            if session_id != NO_SESSION:
                return ErrorCode.fetch_session_id_not_found
            return FetchContext(None, False, requested)
        if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            self._close(session_id, replica_id)
            session = self._open(replica_id, requested) if epoch == INITIAL_EPOCH else None
            return FetchContext(session, False, requested)
        session = self._sessions.get(session_id)
        if session is None or session.replica_id != replica_id:
            return ErrorCode.fetch_session_id_not_found
        if session.epoch != epoch:
            return ErrorCode.invalid_fetch_session_epoch
        session.epoch = epoch + 1 if epoch < _MAX_EPOCH else 1
        self._sessions.move_to_end(session_id)
        held = session.partitions
        for key, partition_request in requested.items():
            entry = held.get(key)
            if entry is None:
                held[key] = _SessionPartition(partition_request)
            else:
                entry.request = partition_request
        for key in forgotten:
            held.pop(key, None)
        return FetchContext(session, True, {key: entry.request for key, entry in held.items()})

    def _open(self, replica_id: int, requested: dict[PartitionKey, object]) -> FetchSession | None:
        if self._slots <= 0:
            return None
        while len(self._sessions) >= self._slots:
            self._sessions.popitem(last=False)
        session_id = random.randint(1, 2**31 - 1)
        while session_id in self._sessions:
            session_id = random.randint(1, 2**31 - 1)
        session = FetchSession(session_id, replica_id, INITIAL_EPOCH + 1,
                               {key: _SessionPartition(r) for key, r in requested.items()})
        self._sessions[session_id] = session
        return session

    def _close(self, session_id: int, replica_id: int) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.replica_id == replica_id:
            del self._sessions[session_id]
