"""Where a topic's replicas go: Kafka's rack-unaware placement, and checks on explicit ones.

Kafka (AdminUtils.assignReplicasToBrokers, kept by KRaft's StripedReplicaPlacer for clusters
without racks) lays partitions out round-robin over the brokers sorted by id:

    leader of partition p        = brokers[(p + start) % n]
    its j-th follower (j = 0..)  = brokers[(leader_index + 1 + (shift + j) % (n - 1)) % n]

where `shift` grows by one each time p wraps around the broker list, so the followers of
successive rounds are staggered and losing one broker spreads its leadership over all others.
Kafka picks `start` (and the first shift) at random; here both come from a hash of the topic
name, so placement is reproducible in tests and still spreads first leaders across topics.
Adding partitions continues the leaders' round-robin (start = the index of partition 0's first
replica, partition ids counting on from the existing ones), as Kafka's addPartitions does.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from wire.error_codes import ErrorCode
from broker.cluster.cluster_error import ClusterError


def start_index_for(topic: str, broker_count: int) -> int:
    return zlib.crc32(topic.encode()) % broker_count


def assign_replicas(broker_ids: Sequence[int], partitions: int, replication_factor: int,
                    start_index: int, first_partition: int = 0) -> list[list[int]]:
    """Replica lists for partitions first_partition .. first_partition + partitions - 1."""
    brokers = sorted(broker_ids)
    n = len(brokers)
    if replication_factor <= 0:
        raise ClusterError(ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0.")
    if partitions <= 0:
        raise ClusterError(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
    if replication_factor > n:
        raise ClusterError(
            ErrorCode.invalid_replication_factor,
            f"Unable to replicate the partition {replication_factor} time(s): The target replication "
            f"factor of {replication_factor} cannot be reached because only {n} broker(s) are registered.")
    shift = start_index
    layout = []
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        layout.append(replicas)
    return layout


def check_assignments(assignments: Sequence[Sequence[int]], registered: set[int],
                      expected_length: int | None = None) -> list[list[int]]:
    """Validate explicit replica lists (CreateTopics / CreatePartitions assignments) as KRaft
    does: non-empty, no broker twice, every broker registered, all of one length."""
    checked: list[list[int]] = []
    for index, replicas in enumerate(assignments):
        replicas = list(replicas)
        if not replicas:
            raise ClusterError(ErrorCode.invalid_replica_assignment,
                               f"The manual partition assignment includes an empty replica list (partition {index}).")
        if len(set(replicas)) != len(replicas):
            raise ClusterError(ErrorCode.invalid_replica_assignment,
                               f"The manual partition assignment includes the broker ids {replicas} more than once.")
        unknown = [b for b in replicas if b not in registered]
        if unknown:
            raise ClusterError(ErrorCode.invalid_replica_assignment,
                               f"The manual partition assignment includes broker {unknown[0]}, but no such "
                               f"broker is registered.")
        length = expected_length if expected_length is not None else len(checked[0]) if checked else len(replicas)
        if len(replicas) != length:
            raise ClusterError(ErrorCode.invalid_replica_assignment,
                               f"The manual partition assignment includes a partition with {len(replicas)} "
                               f"replica(s), but this is not consistent with previous partitions, which have "
                               f"{length} replica(s).")
        checked.append(replicas)
    return checked
