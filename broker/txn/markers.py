"""Writing one transaction's markers to every partition it touched, until each has it.

The partitions this broker leads get their markers through marker_append.MarkerAppender (appended
together and replicated); the partitions led elsewhere get theirs through `remote`, the
inter-broker WriteTxnMarkers call, one request per leader holding all of that leader's
partitions, so that broker appends them together too (None on one broker, which leads
everything). Like Kafka's TransactionMarkerChannelManager, which also sends one request per
destination broker, retriable answers (a leader moving, too few in-sync replicas, a timeout) are
retried with a backoff, timed on the coordinator's clock, until the coordinator gives the
transaction up, which it does when it stops coordinating the id; a partition whose topic was
deleted needs no marker. A partition answering that the marker is stale (an older producer
epoch, an older coordinator epoch) means another coordinator has taken over: sending stops and
the transaction is left to it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Iterable

from wire.error_codes import ErrorCode

from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.coordinator.clock import Clock, SystemClock
from broker.txn.marker_append import Marker, MarkerAppender

log = logging.getLogger(__name__)

RETRY_BACKOFF_MS = (20, 1_000)  # first and longest wait between rounds
_STALE = frozenset({ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced})
_GONE = None  # a partition's answer when its topic was deleted: no marker is needed
_HERE, _ANSWERED = object(), object()  # where _route sends a partition's marker: appended here, or nowhere

# (leader node id, [(topic, index)], producer id, producer epoch, coordinator epoch, commit)
#   -> an error code per partition, in order
RemoteMarkers = Callable[[int, list[tuple[str, int]], int, int, int, bool], Awaitable[list[ErrorCode]]]


class MarkerWriter:
    def __init__(self, topics: TopicLookup, view: ClusterView, node_id: int, appender: MarkerAppender,
                 remote: RemoteMarkers | None = None, clock: Clock | None = None) -> None:
        """`topics` and `view`: where each partition is led, `node_id` this broker's; `clock`: the
        transaction coordinator's, which times the retries."""
        self._topics = topics
        self._view = view
        self._node_id = node_id
        self._appender = appender
        self._remote = remote
        self._clock = clock or SystemClock()

    async def write_all(self, partitions: Iterable[tuple[str, int]], producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, commit: bool, still_ours: Callable[[], bool]) -> bool:
        """True once every partition has its marker; False if the coordinator gave up (the id is
        no longer ours, or a partition says another coordinator took over)."""
        pending = sorted(set(partitions))
        backoff, longest = RETRY_BACKOFF_MS
        while pending:
            if not still_ours():
                return False
            codes = await self._round(pending, producer_id, producer_epoch, coordinator_epoch, commit)
            retry = []
            for (topic, index), code in zip(pending, codes):
                if code is _GONE or code is ErrorCode.none:
                    continue
                if code in _STALE:
                    log.info("marker for producer %d in %s-%d refused (%s): another coordinator took over",
                             producer_id, topic, index, code.name)
                    return False
                retry.append((topic, index))
                log.debug("marker for producer %d in %s-%d: %s; retrying", producer_id, topic, index, code.name)
            pending = retry
            if pending:
                await self._wait(backoff)
                backoff = min(backoff * 2, longest)
        return True

    async def _wait(self, ms: int) -> None:
        woken = asyncio.get_running_loop().create_future()
        def wake() -> None:
            if not woken.done():
                woken.set_result(None)
        handle = self._clock.call_later(ms, wake)
        try:
            await woken
        finally:
            handle.cancel()

    async def _round(self, pending: list[tuple[str, int]], producer_id: int, producer_epoch: int,
                     coordinator_epoch: int, commit: bool) -> list[ErrorCode | None]:
        """One try at every pending partition: those led here appended together (one group
        commit), the others in one request per leader, all awaited together."""
        codes: dict[tuple[str, int], ErrorCode | None] = {}
        local: list[tuple[str, int]] = []
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in pending:
            leader, answer = self._route(*tp)
            if leader is _ANSWERED:
                codes[tp] = answer
            elif isinstance(leader, int):
                by_leader.setdefault(leader, []).append(tp)
            else:  # _HERE
                local.append(tp)
        appending = self._appender.append([Marker(t, i, producer_id, producer_epoch, coordinator_epoch, commit)
                                           for t, i in local])
        remote = self._remote  # None on one broker, where _route names no other leader
        if by_leader and remote is not None:
            leaders = list(by_leader)
            appended, *sent = await asyncio.gather(appending, *(
                remote(leader, by_leader[leader], producer_id, producer_epoch, coordinator_epoch, commit)
                for leader in leaders))
            for leader, answers in zip(leaders, sent):
                codes.update(zip(by_leader[leader], answers))
        else:  # awaited directly: markers that need no wait leave the loop to the transaction's next step
            appended = await appending
        codes.update(zip(local, appended))
        return [codes[tp] for tp in pending]

    def _route(self, topic: str, index: int) -> tuple[object, ErrorCode | None]:
        """(_HERE, None): this broker leads the partition; (node id, None): its leader elsewhere;
        (_ANSWERED, answer): no marker is sent this round (_GONE, or an error to retry)."""
        if self._topics.get(topic) is None:
            return _ANSWERED, _GONE
        partition = self._topics.partition(topic, index)
        if partition is not None and partition.is_leader:
            return _HERE, None
        placement = self._view.placement(topic, index, partition)
        if placement is None:
            return _ANSWERED, _GONE if self._topics.get(topic) is None else ErrorCode.unknown_topic_or_partition
        if self._remote is None or placement.leader < 0 or placement.leader == self._node_id:
            return _ANSWERED, ErrorCode.not_leader_or_follower  # no leader now, or ours but not yet made leader here
        return placement.leader, None
