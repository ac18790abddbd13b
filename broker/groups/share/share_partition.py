"""One share-partition's records in flight (KIP-932): which offsets a share group has handed out,
to whom, until when, how often, and which are done with. Pure logic: the caller gives the time.

The window is [start_offset, end_offset): every offset below start_offset is done with (acknowledged
or archived); every offset at or past end_offset has never been handed out. Inside it each offset
has a state, Kafka's RecordState:

    AVAILABLE      may be acquired (never delivered, released, or its lock ran out)
    ACQUIRED       handed to one member until a deadline (group.share.record.lock.duration.ms)
    ACKNOWLEDGED   ACCEPTed: processed, never delivered again
    ARCHIVED       REJECTed, a gap, or delivered delivery.count.limit times: never delivered again

and a delivery count, which acquiring increments. RENEW (KIP-1222) starts an ACQUIRED record's
lock again, for a member that needs longer. A record whose lock runs out or which is
RELEASEd goes back to AVAILABLE, unless it has been delivered `delivery_limit` times: then it is
ARCHIVED. The start offset moves past every leading ACKNOWLEDGED / ARCHIVED offset. At most
`max_in_flight` offsets lie in the window (group.share.partition.max.record.locks): past that,
nothing new is acquired until the start moves.

What is kept across a restart is `snapshot()`: the start offset and, as ranges, every offset in the
window that is not a never-delivered AVAILABLE; an ACQUIRED offset is kept as AVAILABLE with its
delivery count (a restart ends every lock), so it is delivered again, counted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from wire.error_codes import ErrorCode


class RecordState(enum.IntEnum):  # Kafka's ids, also those of __share_group_state (state_log.py)
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):  # ShareFetch / ShareAcknowledge's AcknowledgeTypes
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # v2 (KIP-1222): keep holding it, the lock starting again


class StateRange(NamedTuple):
    """Offsets first..last (inclusive), all in one state with one delivery count."""
    first: int
    last: int
    state: RecordState
    delivery_count: int


class AcquiredRange(NamedTuple):
    first: int
    last: int
    delivery_count: int


@dataclass(slots=True)
class _InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member: str | None = None
    deadline_ms: int = 0


class InvalidAcknowledgement(Exception):
    """An acknowledgement the partition refuses, whole: `error` is Kafka's code for it."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
_ACK_STATE = {AckType.ACCEPT: RecordState.ACKNOWLEDGED, AckType.REJECT: RecordState.ARCHIVED,
              AckType.GAP: RecordState.ARCHIVED}


class SharePartition:
    def __init__(self, start_offset: int, lock_ms: int, delivery_limit: int, max_in_flight: int,
                 state_epoch: int = 0, kept: tuple[StateRange, ...] = ()) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.lock_ms = lock_ms
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        self.state_epoch = state_epoch
        self._records: dict[int, _InFlight] = {}
        for r in kept:
            for offset in range(max(r.first, start_offset), r.last + 1):
                state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
                self._records[offset] = _InFlight(state, r.delivery_count)
        if self._records:
            self.end_offset = max(self._records) + 1
            for offset in range(start_offset, self.end_offset):
                self._records.setdefault(offset, _InFlight())
        self._advance_start()

    # --- what a fetch reads ---------------------------------------------------------------------

    def next_fetch_offset(self) -> int | None:
        """The first offset that may be acquired, None when the window is full and nothing in it is."""
        for offset in range(self.start_offset, self.end_offset):
            if self._records[offset].state is RecordState.AVAILABLE:
                return offset
        return self.end_offset if self._room() > 0 else None

    def acquire(self, member: str, first: int, last: int, now_ms: int, limit: int | None = None) -> list[AcquiredRange]:
        """Acquire for `member` every AVAILABLE offset in first..last (a fetched batch), new ones
        included while the in-flight limit allows, at most `limit` of them (ShareFetch v2's
        record-limit mode); returns them as ranges of one delivery count."""
        self._extend(last)
        out: list[AcquiredRange] = []
        taken = 0
        for offset in range(max(first, self.start_offset), min(last + 1, self.end_offset)):
            rec = self._records[offset]
            if rec.state is not RecordState.AVAILABLE:
                continue
            if limit is not None and taken >= limit:
                break
            taken += 1
            rec.state, rec.member, rec.deadline_ms = RecordState.ACQUIRED, member, now_ms + self.lock_ms
            rec.delivery_count += 1
            if out and out[-1].last == offset - 1 and out[-1].delivery_count == rec.delivery_count:
                out[-1] = out[-1]._replace(last=offset)
            else:
                out.append(AcquiredRange(offset, offset, rec.delivery_count))
        return out

    def skip(self, first: int, last: int) -> None:
        """Offsets no consumer is given (a control batch): archived where still AVAILABLE."""
        self._extend(last)
        for offset in range(max(first, self.start_offset), min(last + 1, self.end_offset)):
            rec = self._records[offset]
            if rec.state is RecordState.AVAILABLE:
                rec.state = RecordState.ARCHIVED
        self._advance_start()

    def move_start_to(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) are gone from the window too."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            del self._records[offset]
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._advance_start()

    # --- acknowledgements and locks ---------------------------------------------------------------

    def acknowledge(self, member: str, first: int, last: int, types: tuple[int, ...], *, now_ms: int) -> None:
        """ShareAcknowledge / ShareFetch's AcknowledgementBatch: one type for first..last or one per
        offset. All or nothing: raises InvalidAcknowledgement, changing nothing, if any offset is not
        ACQUIRED by `member`."""
        count = last - first + 1
        if count <= 0 or not types or (len(types) != 1 and len(types) != count):
            raise InvalidAcknowledgement(ErrorCode.invalid_request, f"acknowledgement of {first}..{last} with "
                                         f"{len(types)} types")
        try:
            kinds = [AckType(t) for t in types]
        except ValueError:
            raise InvalidAcknowledgement(ErrorCode.invalid_request, f"unknown acknowledge type in {types}") from None
        for offset in range(first, last + 1):
            rec = self._records.get(offset) if offset >= self.start_offset else None
            if rec is None or rec.state is not RecordState.ACQUIRED or rec.member != member:
                raise InvalidAcknowledgement(ErrorCode.invalid_record_state,
                                             f"offset {offset} is not acquired by member {member}")
        for i, offset in enumerate(range(first, last + 1)):
            kind = kinds[0] if len(kinds) == 1 else kinds[i]
            rec = self._records[offset]
            if kind is AckType.RELEASE:
                self._release(rec)
            elif kind is AckType.RENEW:
                rec.deadline_ms = now_ms + self.lock_ms
            else:
                rec.state, rec.member = _ACK_STATE[kind], None
        self._advance_start()

    def expire_locks(self, now_ms: int) -> bool:
        """Every lock past its deadline released; whether any was."""
        expired = [r for r in self._records.values() if r.state is RecordState.ACQUIRED and r.deadline_ms <= now_ms]
        for rec in expired:
            self._release(rec)
        self._advance_start()
        return bool(expired)

    def release_member(self, member: str) -> bool:
        """A member gone (left, expired, closed its share session): its records back; whether any."""
        held = [r for r in self._records.values() if r.state is RecordState.ACQUIRED and r.member == member]
        for rec in held:
            self._release(rec)
        self._advance_start()
        return bool(held)

    def next_deadline_ms(self) -> int | None:
        deadlines = [r.deadline_ms for r in self._records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines, default=None)

    # --- what is kept ---------------------------------------------------------------------------------

    def snapshot(self) -> tuple[int, int, tuple[StateRange, ...]]:
        """(state epoch, start offset, kept ranges): everything a new leader needs (state_log.py)."""
        ranges: list[StateRange] = []
        for offset in range(self.start_offset, self.end_offset):
            rec = self._records[offset]
            state = RecordState.AVAILABLE if rec.state is RecordState.ACQUIRED else rec.state
            if state is RecordState.AVAILABLE and rec.delivery_count == 0:
                continue
            last = ranges[-1] if ranges else None
            if last and last.last == offset - 1 and (last.state, last.delivery_count) == (state, rec.delivery_count):
                ranges[-1] = last._replace(last=offset)
            else:
                ranges.append(StateRange(offset, offset, state, rec.delivery_count))
        return self.state_epoch, self.start_offset, tuple(ranges)

    def state_of(self, offset: int) -> tuple[RecordState, int]:
        """(state, delivery count) of one offset; below the window: done, count unknown (-1)."""
        if offset < self.start_offset:
            return RecordState.ACKNOWLEDGED, -1
        rec = self._records.get(offset)
        return (rec.state, rec.delivery_count) if rec else (RecordState.AVAILABLE, 0)

    # --- inside -----------------------------------------------------------------------------------------

    def _room(self) -> int:
        return self.start_offset + self.max_in_flight - self.end_offset

    def _extend(self, last: int) -> None:
        new_end = min(last + 1, self.start_offset + self.max_in_flight)
        for offset in range(self.end_offset, new_end):
            self._records[offset] = _InFlight()
        self.end_offset = max(self.end_offset, new_end)

    def _release(self, rec: _InFlight) -> None:
        rec.member = None
        rec.state = RecordState.ARCHIVED if rec.delivery_count >= self.delivery_limit else RecordState.AVAILABLE

    def _advance_start(self) -> None:
        while self.start_offset < self.end_offset and self._records[self.start_offset].state in _DONE:
            del self._records[self.start_offset]
            self.start_offset += 1
