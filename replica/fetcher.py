"""The follower's fetcher: one per (this broker, leader broker) pair, Kafka's ReplicaFetcherThread.

Each partition it follows is in one of two states, either of them possibly delayed:

    truncating ──(leader's epoch end offsets applied)──► fetching
        ▲                                                  │
        └──────── offset out of range, our end past ───────┘
                  the leader's

Truncating (KIP-101, KIP-279): a follower's log may end in records the leader never had (it
led once, took writes nobody fetched, and lost its leadership). Before fetching it asks the
leader, with OffsetForLeaderEpoch, for the end of our latest epoch in the leader's log; the
leader answers with its largest epoch up to that one and where it ends. If we have that epoch
too, our log is cut at the smaller of the two ends; if we never had it, our log is cut where
our own largest epoch below it ends, and the question is asked again with our new latest
epoch. A log without any epoch, or one the leader has no epoch for (UNDEFINED), is cut to
its high watermark, Kafka's fallback.

Out of range: if our end is before the leader's log start (retention or DeleteRecords moved
it past us), our log starts over, empty, at the leader's start; if it is past the leader's
end, the partition truncates again through the epochs.

Fetching: one Fetch per round for every fetching partition, from its log end offset (in an
incremental fetch session when the leader grants one: the request names only the partitions
whose offset changed, the answer only those with news, fetch_session.py); each
whole record batch in the answer is appended exactly as the leader stored it (a partial batch
at the end of the answer is normal, Kafka cuts a response at its size limit: it is dropped and
fetched whole next time), then the follower takes the leader's high watermark, capped at its
own LEO.

Fsync before reporting (flush.messages=1, the partition's `fsync_before_report`): a fetch
offset tells the leader "I hold everything below it", and the leader's HW counts it. So a
partition whose log end is past what is fsynced (`flushed_end`: the batches the last answer
brought, or a log found at open) is fsynced first, through `sync` (the broker's group commit:
the fsync runs in a worker thread, the loop goes on), and is asked for in this round's fetch
only once that fsync covered its whole log; the partitions of one answer are fsynced together,
before the next request. A failed fsync took the log offline (segment/storage_errors.py): the
partition backs off and never reports again until a restart, so it leaves the ISR.

Errors touch only their partition: one the leader answers for a partition (not leader, a
fenced or unknown epoch, ...) delays that partition by replica.fetch.backoff.ms (1 s) until
metadata moves it elsewhere; a connection failure delays the partitions of that request. The
others keep fetching. Everything runs on the event loop: no partition changes between a
check and the call that acts on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Mapping, Protocol

from wire.error_codes import ErrorCode
from wire.record_batch import iter_batches

from .cancellation import cancel_and_wait
from .leader_endpoint import (
    NO_EPOCH,
    NO_OFFSET,
    EpochEndOffset,
    EpochQuery,
    FetchPartition,
    FetchResult,
    LeaderEndpoint,
    TopicPartition,
    UNCHANGED,
)

log = logging.getLogger(__name__)


class FollowerPartition(Protocol):
    """The follower's side of a partition, as the fetcher uses it (replica.partition.Partition)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    def latest_epoch(self) -> int:
        """The epoch of the last batch in the log; NO_EPOCH (-1) when there is none."""

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """Kafka's OffsetForLeaderEpoch on our own log: (largest epoch <= `epoch`, the offset
        where it ends); (NO_EPOCH, NO_OFFSET) when we know no such epoch."""

    def append_as_follower(self, batch: bytes | memoryview) -> None:
        """One whole batch v2 as the leader stored it; its base offset must equal the LEO. A
        view into the fetch answer's frame: the log writes it without another copy."""

    def truncate_to(self, offset: int) -> None: ...

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at `offset` (the leader's log start is past our end)."""

    def update_follower_high_watermark(self, high_watermark: int) -> None: ...

    @property
    def fsync_before_report(self) -> bool:
        """flush.messages=1: report only fsynced offsets."""

    @property
    def flushed_end(self) -> int:
        """Below it the log is known to be fsynced."""

    @property
    def generation(self) -> int:
        """Bumped by every truncation: read before an fsync, handed back to `flushed` after it."""

    def flushed(self, upto: int, generation: int) -> None:
        """An fsync begun in `generation` covered the log below `upto`."""


# fsync a partition's log (off the event loop); returns the log end offset it covered.
Sync = Callable[[FollowerPartition], Awaitable[int]]

# What an endpoint raises when the leader cannot be asked at all.
CONNECTION_ERRORS = (ConnectionError, OSError, asyncio.TimeoutError)


def truncation_offset(partition: FollowerPartition, leader_epoch: int, leader_end_offset: int) -> tuple[int, bool]:
    """Where to cut our log given the leader's (epoch, end offset) answer, and whether that
    ends truncation (False: cut there, then ask again with our new latest epoch)."""
    leo = partition.log_end_offset
    if leader_end_offset == NO_OFFSET:
        return min(partition.high_watermark, leo), True  # the leader knows no epoch of ours
    if leader_epoch == NO_EPOCH:
        return min(leader_end_offset, leo), True
    our_epoch, our_end = partition.end_offset_for(leader_epoch)
    if our_end == NO_OFFSET:  # we hold nothing from that epoch or before it
        return min(leader_end_offset, leo), True
    if our_epoch != leader_epoch:  # the leader's epoch is unknown to us: cut back to ours before it
        return min(our_end, leo), False
    return min(our_end, leader_end_offset, leo), True


@dataclass(slots=True, eq=False)
class _FetchState:
    partition: FollowerPartition
    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0
    out_of_range_at: int | None = None  # the LEO the leader last called out of range
    lag: int = 0  # the leader's HW in its last answer less our LEO after it (Kafka's FetcherLagMetrics)


class ReplicaFetcher:
    def __init__(self, endpoint: LeaderEndpoint, *, backoff_ms: int = 1_000,
                 clock: Callable[[], float] = time.monotonic, name: str = "replica-fetcher",
                 sync: Sync | None = None, commit_writes: Callable[[], None] = lambda: None) -> None:
        """`sync`: how a partition that must fsync before reporting is fsynced; without it
        such a partition is never fetched for (it could never report honestly).
        `commit_writes`: the stores' LogStore.commit_writes, called once an answer's batches are
        appended — an engine that gathers appends in memory must write them before the next
        fetch reports them, as the broker does before it answers a produce."""
        self.endpoint = endpoint
        self._sync = sync
        self._commit_writes = commit_writes
        self.name = name
        self._backoff = backoff_ms / 1000
        self._clock = clock
        self._states: dict[TopicPartition, _FetchState] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None

    # ----- what the replica manager calls ------------------------------------------------

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        return frozenset(self._states)

    def add_partitions(self, partitions: Mapping[TopicPartition, tuple[FollowerPartition, int]]) -> None:
        """Follow these partitions in these leader epochs; each truncates before it fetches.
        A partition already followed in the same epoch keeps its state."""
        for tp, (partition, leader_epoch) in partitions.items():
            current = self._states.get(tp)
            if current is not None and current.partition is partition and current.leader_epoch == leader_epoch:
                continue
            self._states[tp] = _FetchState(partition, leader_epoch)
        self._wakeup.set()

    def max_lag(self) -> int:
        """The most offsets any followed partition was behind its leader's HW at its last fetch
        (Kafka's ReplicaFetcherManager MaxLag)."""
        return max((s.lag for s in self._states.values()), default=0)

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop following; an answer already on its way for them is ignored."""
        for tp in tps:
            self._states.pop(tp, None)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])  # one cancel can be lost on 3.11 (cancellation.py)
            self._task = None
        await self.endpoint.close()

    # ----- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                worked = await self.run_round()
            except Exception:  # a bug must not end replication silently: say so, pause, go on
                log.exception("%s: fetch round failed", self.name)
                await asyncio.sleep(self._backoff)
                continue
            if not worked:
                await self._wait_for_work()

    async def _wait_for_work(self) -> None:
        self._wakeup.clear()
        delays = [s.delayed_until for s in self._states.values()]
        timeout = max(0.0, min(delays) - self._clock()) if delays else None
        try:
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    async def run_round(self) -> bool:
        """One truncation request for the partitions that need one, then one fetch for those
        ready to fetch; False when no partition was ready for either."""
        now = self._clock()
        ready = {tp: s for tp, s in self._states.items() if s.delayed_until <= now}
        truncating = {tp: s for tp, s in ready.items() if s.truncating}
        if truncating:
            await self._truncate(truncating)
        fetching = {tp: s for tp, s in ready.items()
                    if self._current(tp, s) and not s.truncating and s.delayed_until <= now}
        unflushed = {tp: s for tp, s in fetching.items() if _unflushed(s.partition)}
        if unflushed:
            await self._flush(unflushed)
            fetching = {tp: s for tp, s in fetching.items()
                        if self._current(tp, s) and s.delayed_until <= now and not _unflushed(s.partition)}
        if fetching:
            await self._fetch(fetching)
        return bool(truncating or fetching or unflushed)

    def _current(self, tp: TopicPartition, state: _FetchState) -> bool:
        """Whether `state` still describes `tp` after an await (not removed, not re-added)."""
        return self._states.get(tp) is state

    def _delay(self, tp: TopicPartition, state: _FetchState, reason: str) -> None:
        log.info("%s: %s-%d backs off %g s: %s", self.name, tp.topic, tp.partition, self._backoff, reason)
        state.delayed_until = self._clock() + self._backoff

    def _guarded(self, tp: TopicPartition, state: _FetchState, step, *args) -> None:
        """Run one partition's step; if its log refuses (a batch it rejects, a disk error),
        only that partition backs off, and it starts again from its LEO."""
        try:
            step(tp, state, *args)
        except Exception as exc:
            log.exception("%s: %s-%d failed", self.name, tp.topic, tp.partition)
            self._delay(tp, state, repr(exc))

    # ----- truncation -------------------------------------------------------------------

    async def _truncate(self, states: dict[TopicPartition, _FetchState]) -> None:
        queries = []
        for tp, state in states.items():
            epoch = state.partition.latest_epoch()
            if epoch == NO_EPOCH:  # nothing to ask about: keep what the HW says is committed
                self._guarded(tp, state, self._truncate_partition, state.partition.high_watermark, True)
            else:
                queries.append(EpochQuery(tp, state.leader_epoch, epoch))
        if not queries:
            return
        try:
            answers = await self.endpoint.offset_for_leader_epoch(queries)
        except CONNECTION_ERRORS as exc:
            for q in queries:
                if self._current(q.tp, states[q.tp]):
                    self._delay(q.tp, states[q.tp], f"OffsetForLeaderEpoch failed: {exc}")
            return
        for q in queries:
            state = states[q.tp]
            if not self._current(q.tp, state):
                continue
            answer = answers.get(q.tp)
            if answer is None:
                self._delay(q.tp, state, "the leader did not answer for it")
            elif answer.error is not ErrorCode.none:
                self._delay(q.tp, state, f"OffsetForLeaderEpoch answered {answer.error.name}")
            else:
                self._guarded(q.tp, state, self._apply_epoch_end, answer)

    def _apply_epoch_end(self, tp: TopicPartition, state: _FetchState, answer: EpochEndOffset) -> None:
        offset, done = truncation_offset(state.partition, answer.leader_epoch, answer.end_offset)
        self._truncate_partition(tp, state, offset, done)

    def _truncate_partition(self, tp: TopicPartition, state: _FetchState, offset: int, done: bool) -> None:
        partition = state.partition
        if offset < partition.log_end_offset:
            log.info("%s: truncating %s-%d from %d to %d", self.name, tp.topic, tp.partition,
                     partition.log_end_offset, offset)
            partition.truncate_to(offset)
        if not done:
            return
        state.truncating = False
        if state.out_of_range_at is not None and partition.log_end_offset >= state.out_of_range_at:
            # The leader called our LEO out of range, yet its epochs do not cut our log (an
            # unclean election can do that): retry later instead of asking in a tight loop.
            self._delay(tp, state, f"offset {state.out_of_range_at} is out of range on the leader")
        state.out_of_range_at = None

    # ----- fsync before reporting ----------------------------------------------------------

    async def _flush(self, states: dict[TopicPartition, _FetchState]) -> None:
        """fsync these partitions' logs, all at once; each is fetched for only if its fsync
        covered its log end."""
        if self._sync is None:
            for tp, state in states.items():
                self._delay(tp, state, "it must fsync before reporting, and this fetcher cannot fsync")
            return
        started = {tp: s.partition.generation for tp, s in states.items()}
        covered = await asyncio.gather(*(self._sync(s.partition) for s in states.values()), return_exceptions=True)
        for (tp, state), upto in zip(states.items(), covered):
            if isinstance(upto, BaseException):
                if isinstance(upto, asyncio.CancelledError):
                    raise upto
                # The log is offline (the fsync failed): nothing more is reported as durable.
                if self._current(tp, state):
                    log.error("%s: %s-%d: fsync before reporting failed: %r", self.name, tp.topic, tp.partition, upto)
                    self._delay(tp, state, f"fsync failed: {upto!r}")
                continue
            state.partition.flushed(upto, started[tp])

    # ----- fetching ---------------------------------------------------------------------

    async def _fetch(self, states: dict[TopicPartition, _FetchState]) -> None:
        requests = [FetchPartition(tp, s.partition.log_end_offset, s.leader_epoch, s.partition.log_start_offset)
                    for tp, s in states.items()]
        try:
            results = await self.endpoint.fetch(requests)
        except CONNECTION_ERRORS as exc:
            for tp, state in states.items():
                if self._current(tp, state):
                    self._delay(tp, state, f"Fetch failed: {exc}")
            return
        for request in requests:
            tp, state = request.tp, states[request.tp]
            if not self._current(tp, state) or state.partition.log_end_offset != request.fetch_offset:
                continue  # removed, re-added, or truncated while the fetch was out
            result = results.get(tp)
            if result is UNCHANGED:
                continue
            if result is None:
                self._delay(tp, state, "the leader did not answer for it")
            elif result.error is ErrorCode.none:
                self._guarded(tp, state, self._append, result)
            elif result.error is ErrorCode.offset_out_of_range:
                self._guarded(tp, state, self._out_of_range, result)
            else:
                self._delay(tp, state, f"Fetch answered {result.error.name}")
        # The next fetch reports these offsets as held, so a crash of this process may no
        # longer lose them: into the page cache before it goes out.
        self._commit_writes()

    def _append(self, tp: TopicPartition, state: _FetchState, result: FetchResult) -> None:
        partition = state.partition
        records = result.records
        for pos, header in iter_batches(records):
            leo = partition.log_end_offset
            log_is_empty = leo == partition.log_start_offset
            if log_is_empty and header.base_offset < leo <= header.last_offset:
                # Our log is empty and starts inside this batch (the leader's log start was
                # moved there by DeleteRecords): start the log at the batch instead.
                partition.truncate_fully_and_start_at(header.base_offset)
            partition.append_as_follower(records[pos : pos + header.size])
        partition.update_follower_high_watermark(min(result.high_watermark, partition.log_end_offset))
        state.lag = max(0, result.high_watermark - partition.log_end_offset)

    def _out_of_range(self, tp: TopicPartition, state: _FetchState, result: FetchResult) -> None:
        partition = state.partition
        leo = partition.log_end_offset
        if 0 <= leo < result.log_start_offset:
            log.info("%s: %s-%d: our end %d is before the leader's log start %d: starting over there",
                     self.name, tp.topic, tp.partition, leo, result.log_start_offset)
            partition.truncate_fully_and_start_at(result.log_start_offset)
        else:  # our end is past the leader's: find where we diverged
            state.truncating = True
            state.out_of_range_at = leo


def _unflushed(partition: FollowerPartition) -> bool:
    """Its fetch offset would report more than is fsynced."""
    return partition.fsync_before_report and partition.flushed_end < partition.log_end_offset
