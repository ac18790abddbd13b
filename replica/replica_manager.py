"""Applies what the controller store says to this broker's partitions: Kafka's ReplicaManager.

For every partition hosted here the broker hands over the state it read from etcd (leader,
leader epoch, partition epoch, replicas, ISR). This class turns it into a role:

- leader is this broker: stop fetching it, `make_leader` (a new epoch starts at our LEO);
- leader is another broker: `make_follower`, and fetch it from that broker, through one
  `ReplicaFetcher` per leader broker (a partition moved to another leader, or led again in a
  new epoch, is removed from its fetcher and added again, which makes the fetcher truncate to
  the new leader's log before fetching);
- no leader (-1: every ISR member is gone): follow nobody until a leader is elected.

A state older than the one applied (lower leader epoch, or the same epoch with a lower
partition epoch) is ignored: etcd's watch delivers in order, but a reload after a lost
watch may hand over what is already known.

It also runs Kafka's ISR-expiration task: every replica.lag.time.max.ms / 2 each led
partition drops followers that lag (the change goes through etcd, see Partition), and its
high-watermark checkpoint: every partition's HW written every 5 s and at close, and read back
at start, so a partition first applied after a restart starts from the HW it had
(high_watermark_checkpoint.py).

With flush.messages=1 its `sync` (the broker's group commit) fsyncs for the fetchers before
they report, and fsyncs the tail a new leader took over unfsynced (it counts only what an
fsync covered, partition.py), then publishes it, so the HW does not wait for the next produce.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable

from .cancellation import cancel_and_wait
from .fetcher import ReplicaFetcher, Sync
from .high_watermark_checkpoint import CHECKPOINT_INTERVAL_MS, HighWatermarkCheckpoint
from .leader_endpoint import LeaderEndpoint, TopicPartition
from .partition import Partition
from .partition_state import PartitionState

log = logging.getLogger(__name__)

NO_LEADER = -1


class ReplicaManager:
    def __init__(self, node_id: int, endpoint_for: Callable[[int], LeaderEndpoint | None],
                 lag_time_max_ms: int, fetch_backoff_ms: int = 1_000,
                 hw_checkpoint: HighWatermarkCheckpoint | None = None,
                 checkpoint_interval_ms: int = CHECKPOINT_INTERVAL_MS, sync: Sync | None = None,
                 commit_writes: Callable[[], None] = lambda: None) -> None:
        self.node_id = node_id
        self._sync = sync
        self._commit_writes = commit_writes  # the fetchers' (fetcher.py)
        self._endpoint_for = endpoint_for  # leader broker id -> a connection to it (None: unknown)
        self._lag_time_max_ms = lag_time_max_ms
        self._fetch_backoff_ms = fetch_backoff_ms
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._following: dict[TopicPartition, tuple[int, int]] = {}  # tp -> (leader, leader epoch)
        self._partitions: dict[TopicPartition, Partition] = {}
        self._hw_checkpoint = hw_checkpoint
        self._checkpoint_interval_ms = checkpoint_interval_ms
        # HWs read back at start, each taken by its partition when first applied
        self._restored_hw = hw_checkpoint.read() if hw_checkpoint is not None else {}
        self._tasks: list[asyncio.Task] = []
        self._tail_syncs: set[asyncio.Task] = set()

    def apply(self, partition: Partition, state: PartitionState) -> None:
        """Make `partition` what `state` says it is (called on the event loop)."""
        tp = TopicPartition(partition.topic, partition.index)
        current = partition.state
        if tp in self._partitions and (state.leader_epoch, state.partition_epoch) < (
                current.leader_epoch, current.partition_epoch):
            return
        if tp not in self._partitions and (hw := self._restored_hw.pop(tp, None)) is not None:
            partition.restore_high_watermark(hw)
        self._partitions[tp] = partition
        if state.leader == self.node_id:
            self._stop_following(tp)
            if not partition.is_leader or current.leader_epoch != state.leader_epoch:
                log.info("%s-%d: leader in epoch %d, ISR %s", tp.topic, tp.partition, state.leader_epoch,
                         list(state.isr))
            partition.make_leader(state)
            if partition.fsync_before_report and partition.flushed_end < partition.log_end_offset:
                self._sync_tail(partition)
            return
        partition.make_follower(state)
        if state.leader == NO_LEADER:
            self._stop_following(tp)
            log.warning("%s-%d: no leader in epoch %d (ISR %s all gone)", tp.topic, tp.partition,
                        state.leader_epoch, list(state.isr))
            return
        if self._following.get(tp) == (state.leader, state.leader_epoch):
            return
        self._stop_following(tp)
        fetcher = self._fetcher_for(state.leader)
        if fetcher is None:
            log.warning("%s-%d: leader %d has no registration to fetch from", tp.topic, tp.partition, state.leader)
            return
        fetcher.add_partitions({tp: (partition, state.leader_epoch)})
        self._following[tp] = (state.leader, state.leader_epoch)
        log.info("%s-%d: following %d in epoch %d from offset %d", tp.topic, tp.partition, state.leader,
                 state.leader_epoch, partition.log_end_offset)

    def _sync_tail(self, partition: Partition) -> None:
        if self._sync is None:
            return  # the tail counts with the next produce's fsync
        task = asyncio.ensure_future(self._publish_synced(partition))
        self._tail_syncs.add(task)
        task.add_done_callback(self._tail_syncs.discard)

    async def _publish_synced(self, partition: Partition) -> None:
        try:
            partition.publish(await self._sync(partition))
        except Exception as exc:  # the log went offline: the tail is never counted
            log.error("%s-%d: fsync of the tail taken over as leader failed: %r", partition.topic,
                      partition.index, exc)

    def remove(self, tps: Iterable[TopicPartition]) -> None:
        """The partitions are no longer hosted here (topic deleted, replica moved away)."""
        for tp in tps:
            self._stop_following(tp)
            self._partitions.pop(tp, None)

    def _fetcher_for(self, leader: int) -> ReplicaFetcher | None:
        fetcher = self._fetchers.get(leader)
        if fetcher is None:
            endpoint = self._endpoint_for(leader)
            if endpoint is None:
                return None
            fetcher = self._fetchers[leader] = ReplicaFetcher(endpoint, backoff_ms=self._fetch_backoff_ms,
                                                              sync=self._sync,
                                                              commit_writes=self._commit_writes)
            fetcher.start()
        return fetcher

    def _stop_following(self, tp: TopicPartition) -> None:
        followed = self._following.pop(tp, None)
        if followed is not None and followed[0] in self._fetchers:
            self._fetchers[followed[0]].remove_partitions([tp])

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._expire_isr(), name="isr-expiration"))
        if self._hw_checkpoint is not None:
            self._tasks.append(asyncio.create_task(self._checkpoint_loop(), name="hw-checkpoint"))

    async def _expire_isr(self) -> None:
        while True:
            await asyncio.sleep(self._lag_time_max_ms / 2000)
            for partition in list(self._partitions.values()):
                partition.shrink_isr_if_lagging()

    def fetcher_max_lag(self) -> int:
        """The most offsets a partition followed here is behind its leader (metrics)."""
        return max((f.max_lag() for f in self._fetchers.values()), default=0)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self._partitions.items()}

    async def _checkpoint_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._checkpoint_interval_ms / 1000)
            # the HWs are read on the loop; the fsyncs of the write happen in a thread
            try:
                await loop.run_in_executor(None, self._hw_checkpoint.write, self.high_watermarks())
            except OSError as exc:  # a full or failing disk: the previous file stays, still a lower bound
                log.warning("could not write %s: %r", self._hw_checkpoint.path, exc)

    async def close(self) -> None:
        await cancel_and_wait(self._tasks + list(self._tail_syncs))
        self._tasks = []
        for fetcher in self._fetchers.values():
            await fetcher.close()
        self._fetchers.clear()
        self._following.clear()
        if self._hw_checkpoint is not None:
            self._hw_checkpoint.write(self.high_watermarks())
