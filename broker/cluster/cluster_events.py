"""The replication events this broker made happen, counted for /metrics as Kafka's meters count
them: ISR shrinks and expands the controller store accepted from this broker as a leader
(ReplicaManager IsrShrinksPerSec / IsrExpandsPerSec, marked when the AlterPartition is accepted),
and the leader elections this broker wrote as controller or for an ElectLeaders request
(ControllerStats LeaderElectionRateAndTimeMs / UncleanLeaderElectionsPerSec; etcd lets any
broker write an election Admin asked for, where Kafka's one controller writes them all).

Plain integers bumped on the event loop when the event is accepted, copied on the loop at
scrape time (metrics_collector.py): nothing is paid per request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.cluster.etcd_layout import NO_LEADER, PartitionState

Rule = Callable[[PartitionState], PartitionState | None]


@dataclass
class ClusterEvents:
    isr_shrinks: int = 0
    isr_expands: int = 0
    leader_elections: int = 0
    unclean_leader_elections: int = 0
    election_seconds: float = 0.0  # summed over leader_elections: the compare-and-swap that wrote each

    def isr_changed(self, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        if len(after) < len(before):
            self.isr_shrinks += 1
        elif len(after) > len(before):
            self.isr_expands += 1

    async def electing(self, write: Callable[[Rule], Awaitable[PartitionState | None]],
                       rule: Rule) -> PartitionState | None:
        """`write(rule)`: a compare-and-swap deciding a partition's next state by `rule`; the
        state it wrote counts as an election if it gave the partition a new leader, unclean if
        that leader was not in the ISR the rule judged (the last one read, the CAS retries)."""
        judged: list[PartitionState] = []

        def judging(state: PartitionState) -> PartitionState | None:
            judged.append(state)
            return rule(state)

        started = time.perf_counter()
        written = await write(judging)
        if written is not None and judged:
            before = judged[-1]
            if written.leader != NO_LEADER and written.leader != before.leader:
                self.leader_elections += 1
                self.election_seconds += time.perf_counter() - started
                if written.leader not in before.isr:
                    self.unclean_leader_elections += 1
        return written


@dataclass(frozen=True)
class ReplicationFigures:
    """What /metrics shows of replication on this broker, copied on the event loop."""
    isr_shrinks: int = 0
    isr_expands: int = 0
    leader_elections: int = 0
    unclean_leader_elections: int = 0
    election_seconds: float = 0.0
    offline_partitions: int = 0  # on the controller (Kafka's OfflinePartitionsCount); 0 elsewhere
    fetcher_max_lag: int = 0  # the most any followed partition is behind its leader's HW
