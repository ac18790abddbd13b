"""Writing one transaction's markers to every partition it touched, until each has it.

The partitions this broker leads get their markers through marker_append.append_markers (appended
together and replicated); a partition led elsewhere gets it through `remote`, the inter-broker WriteTxnMarkers
call (None on one broker, which leads everything). Like Kafka's TransactionMarkerChannelManager,
retriable answers (a leader moving, too few in-sync replicas, a timeout) are retried with a
backoff until the coordinator gives the transaction up, which it does when it stops coordinating
the id; a partition whose topic was deleted needs no marker. A partition answering that the
marker is stale (an older producer epoch, an older coordinator epoch) means another coordinator
has taken over: sending stops and the transaction is left to it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Iterable

from broker.txn.marker_append import Marker, append_markers

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = (0.02, 1.0)  # first and longest wait between rounds
_STALE = frozenset({"invalid_producer_epoch", "transaction_coordinator_fenced"})
_DONE = "none"
_GONE = "topic deleted"

# (leader node id, topic, index, producer id, producer epoch, coordinator epoch, commit) -> error name
RemoteMarker = Callable[[int, str, int, int, int, int, bool], Awaitable[str]]


class MarkerWriter:
    def __init__(self, broker, remote: RemoteMarker | None = None) -> None:
        self._broker = broker
        self._remote = remote

    async def write_all(self, partitions: Iterable[tuple[str, int]], producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, commit: bool, still_ours: Callable[[], bool]) -> bool:
        """True once every partition has its marker; False if the coordinator gave up (the id is
        no longer ours, or a partition says another coordinator took over)."""
        pending = sorted(set(partitions))
        backoff, longest = RETRY_BACKOFF_S
        while pending:
            if not still_ours():
                return False
            codes = await self._round(pending, producer_id, producer_epoch, coordinator_epoch, commit)
            retry = []
            for (topic, index), code in zip(pending, codes):
                if code in (_DONE, _GONE):
                    continue
                if code in _STALE:
                    log.info("marker for producer %d in %s-%d refused (%s): another coordinator took over",
                             producer_id, topic, index, code)
                    return False
                retry.append((topic, index))
                log.debug("marker for producer %d in %s-%d: %s; retrying", producer_id, topic, index, code)
            pending = retry
            if pending:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, longest)
        return True

    async def _round(self, pending: list[tuple[str, int]], producer_id: int, producer_epoch: int,
                     coordinator_epoch: int, commit: bool) -> list[str]:
        """One try at every pending partition: those led here appended together (one group
        commit), the others sent to their leaders, all awaited together."""
        topics = self._broker.topics
        local = [(t, i) for t, i in pending
                 if topics.get(t) is not None and (p := topics.partition(t, i)) is not None and p.is_leader]
        led_here = set(local)
        remote = [tp for tp in pending if tp not in led_here]
        appending = append_markers(self._broker, [Marker(t, i, producer_id, producer_epoch, coordinator_epoch, commit)
                                                  for t, i in local])
        if remote:
            appended, *sent = await asyncio.gather(appending, *(
                self._remote_one(t, i, producer_id, producer_epoch, coordinator_epoch, commit) for t, i in remote))
        else:  # awaited directly: markers that need no wait leave the loop to the transaction's next step
            appended, sent = await appending, []
        codes = dict(zip(local, appended)) | dict(zip(remote, sent))
        return [codes[tp] for tp in pending]

    async def _remote_one(self, topic: str, index: int, producer_id: int, producer_epoch: int,
                          coordinator_epoch: int, commit: bool) -> str:
        broker = self._broker
        if broker.topics.get(topic) is None:
            return _GONE
        partition = broker.topics.partition(topic, index)
        placement = broker.view.placement(topic, index, partition)
        if placement is None:
            return _GONE if broker.topics.get(topic) is None else "unknown_topic_or_partition"
        if self._remote is None or placement.leader < 0 or placement.leader == broker.config.node_id:
            return "not_leader_or_follower"  # no leader now, or ours but not yet made leader here
        return await self._remote(placement.leader, topic, index, producer_id, producer_epoch, coordinator_epoch,
                                  commit)
