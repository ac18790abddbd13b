"""What a Partition refuses, each error carrying Kafka's error the handler answers with."""

from __future__ import annotations

from wire.error_codes import ErrorCode


class PartitionError(Exception):
    code = ErrorCode.unknown_server_error


class NotLeader(PartitionError):
    code = ErrorCode.not_leader_or_follower


class NotEnoughReplicas(PartitionError):
    code = ErrorCode.not_enough_replicas


class InvalidTxnState(PartitionError):
    """A transaction's first batch whose producer's transaction ended while it was verified."""

    code = ErrorCode.invalid_txn_state


class NotEnoughReplicasAfterAppend(PartitionError):
    code = ErrorCode.not_enough_replicas_after_append


class RecordsNotDeletable(PartitionError):
    """DeleteRecords on a log whose cleanup.policy lacks "delete" (Kafka's PolicyViolationException)."""

    code = ErrorCode.policy_violation


class DeleteOffsetOutOfRange(PartitionError):
    """DeleteRecords before an offset below 0 or above the high watermark."""

    code = ErrorCode.offset_out_of_range
