"""flush.messages=1 in a cluster: a replica's offsets count only what it has fsynced.

A follower's fetch offset is what the leader's HW counts, so it must never pass what the
follower's fsyncs covered; a follower that becomes leader counts as its LEO only what is
fsynced, and its tail once fsynced. Real segment logs and real fsyncs (through the log's own
flush, in a thread, as the broker's group commit runs it); the leader is the in-memory one.
"""

from __future__ import annotations

import asyncio

from replica.fetcher import ReplicaFetcher
from replica.leader_endpoint import TopicPartition
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.replica_manager import ReplicaManager
from replica.tests.memory_replicas import TP, LeaderReplica, MemoryFollower, MemoryLeader, MemoryLog, make_batch
from segment.kafka.store import SegmentLogStore
from segment.log import LogConfig, LogOffline
from segment.tests.log_configs import log_config

OTHER = TopicPartition("t", 1)
FSYNC_BEFORE_ACK = log_config(flush_messages=1)
LAG_MS = 30_000  # replica.lag.time.max.ms: no follower leaves the ISR within a test


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Fsyncs:
    """The sync a broker hands its fetchers: the log's fsync in a thread, returning the log end
    it covered (read before it starts); remembers how far each partition's fsyncs reached."""

    def __init__(self) -> None:
        self.synced: dict[int, int] = {}  # id(partition) -> end covered by its last fsync
        self.calls = 0

    async def __call__(self, partition) -> int:
        self.calls += 1
        end = partition.log_end_offset
        await asyncio.to_thread(partition.flush_together, partition.flush_group, [partition])
        self.synced[id(partition)] = end
        return end


class WatchedLeader(MemoryLeader):
    """Remembers, for each fetch, the offset the follower reported and how far it had fsynced."""

    def __init__(self, fsyncs: Fsyncs, follower) -> None:
        super().__init__()
        self.fsyncs = fsyncs
        self.follower = follower
        self.reports: list[tuple[int, int]] = []  # (fetch offset, fsynced end)

    async def fetch(self, partitions):
        for p in partitions:
            self.reports.append((p.fetch_offset, self.fsyncs.synced.get(id(self.follower), 0)))
        return await super().fetch(partitions)


def follower_partition(tmp_path, config: LogConfig) -> tuple[SegmentLogStore, Partition]:
    store = SegmentLogStore(tmp_path)
    log = store.open_partition("t", 0, config)
    return store, Partition("t", 0, log, 2, config, min_insync_replicas=1, lag_time_max_ms=LAG_MS,
                             lead_alone=False)


def leader_holding(leader: MemoryLeader, batches: int) -> LeaderReplica:
    replica = LeaderReplica()
    replica.become_leader(0)
    for _ in range(batches):
        replica.append(records=2)
    leader.replicas[TP] = replica
    return replica


def test_a_follower_reports_only_offsets_an_fsync_covered(tmp_path):
    store, follower = follower_partition(tmp_path, FSYNC_BEFORE_ACK)
    fsyncs = Fsyncs()
    leader = WatchedLeader(fsyncs, follower)
    replica = leader_holding(leader, 3)

    async def go():
        clock = Clock()
        fetcher = ReplicaFetcher(leader, clock=clock, sync=fsyncs)
        fetcher.add_partitions({TP: (follower, 0)})
        for _ in range(6):
            replica.append(records=2)  # more arrives between rounds
            await fetcher.run_round()
        await fetcher.run_round()  # fsyncs, then reports, what the last answer brought

    asyncio.run(go())
    store.close()
    assert all(offset <= synced for offset, synced in leader.reports), leader.reports
    # and it progressed: each report is the end of what the answer before brought, fsynced
    assert [offset for offset, _ in leader.reports] == [0, 8, 10, 12, 14, 16, 18]
    assert follower.log_end_offset == 18
    assert replica.high_watermark <= fsyncs.synced[id(follower)]


def test_other_flush_settings_report_the_log_end_without_an_fsync(tmp_path):
    store, follower = follower_partition(tmp_path, log_config(flush_messages=0))
    fsyncs = Fsyncs()
    leader = WatchedLeader(fsyncs, follower)
    replica = leader_holding(leader, 2)

    async def go():
        fetcher = ReplicaFetcher(leader, clock=Clock(), sync=fsyncs)
        fetcher.add_partitions({TP: (follower, 0)})
        for _ in range(3):
            replica.append(records=2)
            await fetcher.run_round()

    asyncio.run(go())
    store.close()
    assert fsyncs.calls == 0  # Kafka's ISR semantics: the page cache counts
    assert [offset for offset, _ in leader.reports] == [0, 6, 8]


def test_a_failed_fsync_is_never_reported_and_the_other_partitions_go_on():
    leader = MemoryLeader()
    for tp in (TP, OTHER):
        replica = LeaderReplica(log=MemoryLog([make_batch(0, 0, 2), make_batch(2, 0, 2)]))
        replica.become_leader(0)
        leader.replicas[tp] = replica
    failing, healthy = MemoryFollower(fsync_before_report=True), MemoryFollower(fsync_before_report=True)

    async def sync(partition) -> int:
        if partition is failing:
            raise LogOffline("fsync of 00000000000000000000.log failed: Input/output error")
        return partition.log_end_offset

    async def go():
        clock = Clock()
        fetcher = ReplicaFetcher(leader, clock=clock, sync=sync)
        fetcher.add_partitions({TP: (failing, 0), OTHER: (healthy, 0)})
        for _ in range(4):
            leader.replicas[OTHER].append(records=1)
            await fetcher.run_round()
            clock.now += 2.0  # past the backoff: the failing one is tried again, and fails again

    asyncio.run(go())
    reported = {tp: [p.fetch_offset for name, ps in leader.requests if name == "fetch" for p in ps if p.tp == tp]
                for tp in (TP, OTHER)}
    assert reported[TP] == [0]  # the empty log's offset, then never what the fsync failed to cover
    assert failing.log_end_offset == 4 and failing.flushed_end == 0
    assert leader.replicas[TP].high_watermark == 0
    assert reported[OTHER] == [0, 5, 6, 7]
    assert healthy.flushed_end == 7 and healthy.log_end_offset == 8  # the last answer: fsynced next round


def test_an_fsync_begun_before_a_truncation_counts_nothing(tmp_path):
    store, follower = follower_partition(tmp_path, FSYNC_BEFORE_ACK)
    for base in (0, 2, 4):
        follower.append_as_follower(make_batch(base, 0, 2))
    begun_in = follower.generation
    follower.truncate_to(2)
    follower.append_as_follower(make_batch(2, 1, 4, tag=b"new leader"))  # offsets 2..5: other bytes
    follower.flushed(6, begun_in)  # the fsync that began before the cut ends now
    assert follower.flushed_end == 0
    follower.flushed(6, follower.generation)
    assert follower.flushed_end == 6
    store.close()


def test_a_new_leader_counts_its_unfsynced_tail_only_once_fsynced(tmp_path):
    store, partition = follower_partition(tmp_path, FSYNC_BEFORE_ACK)
    for base in (0, 2, 4):
        partition.append_as_follower(make_batch(base, 0, 2))
    partition.flushed(4, partition.generation)  # the fetcher's fsync covered two of the three batches
    fsyncs = Fsyncs()

    async def go():
        replicas = ReplicaManager(2, lambda leader: None, lag_time_max_ms=LAG_MS, sync=fsyncs)
        replicas.apply(partition, PartitionState(2, 1, 1, (2, 3), (2,)))  # leads alone in its ISR
        assert partition.high_watermark == 4  # not 6: offsets 4, 5 are not on disk yet
        for _ in range(100):
            await asyncio.sleep(0.01)
            if partition.high_watermark == 6:
                break
        await replicas.close()

    asyncio.run(go())
    store.close()
    assert fsyncs.synced[id(partition)] == 6
    assert partition.high_watermark == partition.flushed_end == 6
