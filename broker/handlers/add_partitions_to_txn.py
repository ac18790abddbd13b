"""AddPartitionsToTxn v0-v3: a transactional producer names the partitions it is about to write.

As Kafka's handleAddPartitionToTxnRequest: without WRITE on the transactional id every partition
gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a partition of a topic the producer may not WRITE gets
TOPIC_AUTHORIZATION_FAILED, one of no existing topic UNKNOWN_TOPIC_OR_PARTITION, and then the
others OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every partition gets the
coordinator's one answer (broker/txn/coordinator.py). v4+ (a broker verifying a partition for
its leader, KIP-890) are not served.
"""

from __future__ import annotations

from wire.protocol import response_for

from broker.security.acl.checks import denied_names, transactional_id_allowed
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested
from broker.handlers.txn_errors import for_version


def _partition_errors(broker, topics) -> dict[tuple[str, int], str]:
    """Per partition, why it cannot be added; empty when all can."""
    unwritable = denied_names(broker, Operation.WRITE, ResourceType.TOPIC, (t.name for t in topics))
    refused = {}
    for t in topics:
        topic = broker.topics.topics.get(t.name)  # not a key-lookup view: those take no writes
        for index in t.partitions:
            if t.name in unwritable:
                refused[(t.name, index)] = "topic_authorization_failed"
            elif topic is None or not 0 <= index < len(topic.partitions):
                refused[(t.name, index)] = "unknown_topic_or_partition"
    return refused


async def handle(broker, header, request):
    cls = response_for(header)
    topic_cls = nested(cls, "AddPartitionsToTxnTopicResult")
    part_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    txn_id = request.v3_and_below_transactional_id
    topics = request.v3_and_below_topics
    wanted = [(t.name, i) for t in topics for i in t.partitions]
    if not transactional_id_allowed(broker, Operation.WRITE, txn_id):
        codes = dict.fromkeys(wanted, "transactional_id_authorization_failed")
    else:
        refused = _partition_errors(broker, topics)
        if refused:
            codes = {p: refused.get(p, "operation_not_attempted") for p in wanted}
        else:
            code = await broker.transactions.add_partitions(
                txn_id, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch, set(wanted))
            codes = dict.fromkeys(wanted, for_version(code, header))
    results = tuple(
        make(topic_cls, name=t.name, results_by_partition=tuple(
            make(part_cls, partition_index=i, partition_error_code=error(codes[(t.name, i)])) for i in t.partitions))
        for t in topics)
    return make(cls, throttle_time=NO_THROTTLE, results_by_topic_v3_and_below=results)
