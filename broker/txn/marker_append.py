"""Appending one transaction marker to one partition this broker leads, and waiting until it is
replicated: what WriteTxnMarkers does for a remote coordinator and what a local coordinator
calls directly.

The marker is appended by the partition's leader (replica.Partition.append_txn_marker:
NOT_LEADER_OR_FOLLOWER elsewhere, INVALID_PRODUCER_EPOCH for an epoch older than the
producer's, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch) and answered as
Kafka's coordinator appends it: with acks=all, once the high watermark passes it (and after the
fsync flush.messages asks for), because the coordinator counts a transaction complete only when
every marker is replicated. A replicated marker in `__consumer_offsets` also ends the
producer's pending transactional offsets there (Kafka's onTransactionCompleted).
"""

from __future__ import annotations

from replica.partition_errors import PartitionError
from replica.producer_state import CoordinatorFenced, ProducerFenced
from segment.log import StorageError

from broker.groups import offsets, offsets_log

MARKER_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms, which its coordinator's marker appends wait


async def append_marker(broker, topic_name: str, index: int, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, commit: bool) -> str:
    """One marker in one partition; returns a Kafka error name ("none" once replicated)."""
    topic = broker.topics.get(topic_name)
    partition = broker.topics.partition(topic_name, index)
    if topic is None or partition is None:
        return broker.topics.missing_partition_error(topic_name, index)
    if partition.read_only:
        return "invalid_topic_exception"
    try:
        info = partition.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit=commit)
    except PartitionError as exc:
        return exc.code
    except ProducerFenced:
        return "invalid_producer_epoch"
    except CoordinatorFenced:
        return "transaction_coordinator_fenced"
    except StorageError:
        return "kafka_storage_error"
    if broker.flush_by_count.appended(partition, 1):
        try:
            partition.publish(await broker.durable(partition))
        except StorageError:
            return "kafka_storage_error"
    else:
        partition.publish()
    replicated = await partition.wait_for_replication(info.last_offset + 1, MARKER_TIMEOUT_S)
    if replicated == "none" and topic_name == offsets_log.TOPIC:
        offsets.end_transaction(broker.groups, index, producer_id, info.first_offset, commit)
    return replicated
