"""A follower's appended batches are in the files before its next fetch reports them.

The commitlog engine gathers appends in memory until its store's commit_writes (one pwritev
per request on the produce path). A follower's next fetch offset tells the leader it holds
everything below it, and the HW counts that; so what a fetch answer brought must reach the
page cache before that fetch goes out, or killing the follower's process loses records the
leader acknowledged as replicated. A real commitlog store; the "crash" is a second store
opened on the same directory while the first was never closed or flushed.
"""

from __future__ import annotations

import asyncio

from replica.fetcher import ReplicaFetcher
from replica.partition import Partition
from replica.tests.memory_replicas import TP, LeaderReplica, MemoryLeader
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config


class ReportingLeader(MemoryLeader):
    """Remembers the offsets the follower reported."""

    def __init__(self) -> None:
        super().__init__()
        self.reported: list[int] = []

    async def fetch(self, partitions):
        self.reported += [p.fetch_offset for p in partitions]
        return await super().fetch(partitions)


def test_what_a_follower_reported_survives_its_process_dying(tmp_path):
    store = RocketLogStore(tmp_path)
    follower = Partition(TP.topic, TP.partition, store.open_partition(TP.topic, TP.partition, log_config()),
                         2, log_config(), min_insync_replicas=1, lag_time_max_ms=30_000, lead_alone=False)
    leader = ReportingLeader()
    replica = leader.replicas[TP] = LeaderReplica()
    replica.become_leader(0)
    for _ in range(3):
        replica.append(records=2)

    async def go():
        fetcher = ReplicaFetcher(leader, commit_writes=store.commit_writes)
        fetcher.add_partitions({TP: (follower, 0)})
        await fetcher.run_round()  # brings offsets 0..5
        await fetcher.run_round()  # reports 6

    asyncio.run(go())
    assert leader.reported[-1] == 6
    # The process dies here: no close, no flush. What the files hold is what a restart finds.
    reopened = RocketLogStore(tmp_path)
    log = reopened.open_partition(TP.topic, TP.partition, log_config())
    assert log.log_end_offset >= leader.reported[-1]
