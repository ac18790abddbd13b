"""A leader's in-sync replicas over time, and what acks=all needs of them.

Every follower fetch moves that follower's progress in the leader's bookkeeping
(leader_state.py), and with it maybe the high watermark, which wakes what waits on it. A
follower that caught up is proposed into the ISR, and followers that lag for
replica.lag.time.max.ms (checked periodically, as Kafka's isr-expiration task) are proposed out;
one proposal at a time goes to the controller store (isr_change.py), and an ISR counts only once
the store accepted it, in the leader epoch it was proposed in. An acks=all produce needs
min.insync.replicas in the ISR before anything is appended, and again once the high watermark
passed it, or its records are not acknowledged.

It is apart from Partition (partition.py), which decides a replica's role and appends, because
these are the leader's dealings with its followers; it reads the partition's role, ISR and
waiters and hands an accepted state back to it (`Partition.isr_accepted`).
"""

from __future__ import annotations

from typing import Protocol

from wire.error_codes import ErrorCode

from .isr_change import IsrProposer, PendingIsrChange
from .leader_state import LeaderState
from .partition_errors import NotEnoughReplicas, NotEnoughReplicasAfterAppend, NotLeader
from .partition_state import PartitionState
from .purgatory import PartitionPurgatory


class LedPartition(Protocol):
    """What of a Partition (partition.py) this reads, and the one call back it makes: not an
    import of partition.py, which imports this module."""
    topic: str
    index: int
    leader: LeaderState | None
    purgatory: PartitionPurgatory
    min_insync_replicas: int

    def isr_accepted(self, state: PartitionState) -> None: ...


class IsrMaintenance:
    def __init__(self, partition: LedPartition) -> None:
        self._partition = partition
        self._change = PendingIsrChange()

    def propose_through(self, proposer: IsrProposer) -> None:
        """Send ISR changes to `proposer` (a cluster member's AlterPartition through etcd,
        member.py); without one (a single broker, its own ISR) none are proposed."""
        self._change.proposer = proposer

    @property
    def proposing(self) -> bool:
        return self._change.proposer is not None

    def follower_fetched(self, replica_id: int, fetch_offset: int) -> None:
        """A follower's Fetch at fetch_offset: it holds everything below it."""
        p = self._partition
        leader = p.leader
        if leader is None:
            return
        before = leader.high_watermark
        leader.follower_fetched(replica_id, fetch_offset)
        if leader.high_watermark != before:
            # Only a moved HW wakes anyone, and only acks=all produces and consumers: waking
            # every parked fetch on each follower fetch made two followers' long-polls wake
            # each other in a loop (66% of a core per broker with an idle 50-partition RF=3
            # topic); a follower reads to the LEO, which a follower's fetch does not move.
            p.purgatory.high_watermark_moved(leader.high_watermark)
            p.purgatory.high_watermark_advanced()
        if leader.may_join(replica_id):
            self._change.propose(p, sorted(leader.isr | {replica_id}), p.isr_accepted)

    def shrink_if_lagging(self) -> None:
        """Called periodically (every lag time / 2, as Kafka's isr-expiration task)."""
        p = self._partition
        if p.leader is None:
            return
        lagging = p.leader.lagging()
        if lagging:
            self._change.propose(p, sorted(p.leader.isr - lagging), p.isr_accepted)

    def check_enough_replicas(self, acks: int) -> None:
        """Kafka's appendRecordsToLeader: acks=all with fewer than min.insync.replicas in the ISR
        appends nothing (NotEnoughReplicas)."""
        p = self._partition
        if acks == -1 and len(p.leader.isr) < p.min_insync_replicas:
            raise NotEnoughReplicas(
                f"The size of the current ISR {sorted(p.leader.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {p.min_insync_replicas} for partition {p.topic}-{p.index}")

    async def wait_for_replication(self, required_offset: int, timeout_s: float) -> ErrorCode:
        """acks=all: wait until the HW reaches `required_offset` (the batch's last offset + 1);
        returns Kafka's error (ErrorCode.none when acknowledged)."""
        p = self._partition
        if p.leader is None:
            return NotLeader.code
        failed = await p.purgatory.wait_for_high_watermark(required_offset, p.leader.high_watermark, timeout_s)
        if failed is not None:
            return failed
        if p.leader is None:  # it stopped leading while the produce waited
            return NotLeader.code
        if len(p.leader.isr) < p.min_insync_replicas:
            return NotEnoughReplicasAfterAppend.code
        return ErrorCode.none
