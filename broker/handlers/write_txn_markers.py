"""WriteTxnMarkers v1-v2: the transaction coordinator's call that ends a transaction in each of
its partitions with a COMMIT or ABORT marker (Kafka's handleWriteTxnMarkersRequest).

Only a broker may call it: without CLUSTER_ACTION on the cluster every partition answers
CLUSTER_AUTHORIZATION_FAILED. Each marker is appended by the partition's leader
(replica.Partition.append_txn_marker: NOT_LEADER_OR_FOLLOWER elsewhere, INVALID_PRODUCER_EPOCH
for an epoch older than the producer's, TRANSACTION_COORDINATOR_FENCED for an older coordinator
epoch) and answered as Kafka's coordinator appends it: with acks=all, once the high watermark
passes it (and after the fsync flush.messages asks for), because the coordinator counts a
transaction complete only when every marker is replicated. v2's transaction_version changes
nothing here: a marker is checked the same way for either transaction protocol.
"""

from __future__ import annotations

import asyncio

from replica.partition_errors import PartitionError
from replica.producer_state import CoordinatorFenced, ProducerFenced
from segment.log import StorageError
from wire.protocol import response_for

from broker.security.acl.checks import cluster_allowed
from broker.security.acl.model import Operation
from broker.handlers.response_builder import error, make, nested

MARKER_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms, which its coordinator's marker appends wait


async def _write(broker, topic_name: str, index: int, marker) -> str:
    """One marker in one partition; returns a Kafka error name."""
    topic = broker.topics.get(topic_name)
    partition = broker.topics.partition(topic_name, index)
    if topic is None or partition is None:
        return broker.topics.missing_partition_error(topic_name, index)
    if partition.read_only:
        return "invalid_topic_exception"
    try:
        info = partition.append_txn_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                                           commit=marker.transaction_result)
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
    return await partition.wait_for_replication(info.last_offset + 1, MARKER_TIMEOUT_S)


async def handle(broker, header, request):
    cls = response_for(header)
    marker_cls = nested(cls, "WritableTxnMarkerResult")
    topic_cls = nested(cls, "WritableTxnMarkerTopicResult")
    part_cls = nested(cls, "WritableTxnMarkerPartitionResult")
    refused = not cluster_allowed(broker, Operation.CLUSTER_ACTION)
    jobs = [(m, t.name, i) for m in request.markers for t in m.topics for i in t.partition_indexes]
    if refused:
        codes = ["cluster_authorization_failed"] * len(jobs)
    else:  # partitions in order, each awaited for its replication together
        pending = []
        for marker, name, index in jobs:
            pending.append(asyncio.ensure_future(_write(broker, name, index, marker)))
        codes = await asyncio.gather(*pending)
    answers = iter(codes)
    markers = []
    for m in request.markers:
        topics = tuple(make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=i, error_code=error(next(answers))) for i in t.partition_indexes))
            for t in m.topics)
        markers.append(make(marker_cls, producer_id=m.producer_id, topics=topics))
    return make(cls, markers=tuple(markers))
