"""What a Partition refuses, each error carrying the Kafka error name the handler answers with."""

from __future__ import annotations


class PartitionError(Exception):
    code = "unknown_server_error"


class NotLeader(PartitionError):
    code = "not_leader_or_follower"


class NotEnoughReplicas(PartitionError):
    code = "not_enough_replicas"


class InvalidTxnState(PartitionError):
    """A transaction's first batch whose producer's transaction ended while it was verified."""

    code = "invalid_txn_state"


class NotEnoughReplicasAfterAppend(PartitionError):
    code = "not_enough_replicas_after_append"


class RecordsNotDeletable(PartitionError):
    """DeleteRecords on a log whose cleanup.policy lacks "delete" (Kafka's PolicyViolationException)."""

    code = "policy_violation"


class DeleteOffsetOutOfRange(PartitionError):
    """DeleteRecords before an offset below 0 or above the high watermark."""

    code = "offset_out_of_range"
