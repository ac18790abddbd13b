"""What the controller store says about one partition: Kafka's LeaderAndIsr.

The replica manager hands it to Partition.make_leader / make_follower, and an accepted ISR
change comes back as one. It is apart from partition.py because the cluster member builds it
from the store's record (broker/cluster/member.py) without needing a Partition.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
