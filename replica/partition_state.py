"""What the controller store says about one partition: Kafka's LeaderAndIsr.

The replica manager hands it to Partition.make_leader / make_follower, and an accepted ISR
change comes back as one. It is apart from partition.py because the cluster member builds it
from the store's record (broker/cluster/member.py) without needing a Partition.
"""

from __future__ import annotations

from dataclasses import dataclass

from wire.error_codes import ErrorCode


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    def epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        """Kafka's check of a client's current_leader_epoch against this one (-1: the client
        does not say): the error, None when it may ask."""
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.unknown_leader_epoch
        if 0 <= current_leader_epoch < self.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        return None
