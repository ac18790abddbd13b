"""AddPartitionsToTxn v0-v5: a transactional producer names the partitions it is about to write
(v0-v3); a partition leader asks the coordinator about producers' partitions (v4+, KIP-890).

v0-v3, as Kafka's handleAddPartitionToTxnRequest: without WRITE on the transactional id every
partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a partition of a topic the producer may not
WRITE gets TOPIC_AUTHORIZATION_FAILED, one of no existing topic UNKNOWN_TOPIC_OR_PARTITION, and
then the others OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every partition gets the
coordinator's one answer (broker/txn/coordinator.py).

v4+ carry a batch of transactions and only a broker may send them: without CLUSTER_ACTION on the
cluster the whole answer is CLUSTER_AUTHORIZATION_FAILED (the transactional id is not checked:
the leader checked it on the produce). Each transaction is checked for its topics as above, then
with verify_only the coordinator says per partition whether the open transaction holds it
(TRANSACTION_ABORTABLE if not: v5's error; v4 answers INVALID_TXN_STATE, the error a leader's
produce gives older clients); without verify_only the partitions are added as v0-v3 add them.
"""

from __future__ import annotations

from typing import Any, Sequence

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.handlers.txn_errors import for_version
from broker.net.request_context import current_connection_id

FIRST_BROKER_VERSION = 4
FIRST_TRANSACTION_ABORTABLE = 5

Topics = Sequence[Any]  # the request's topics (kio), each a name and partition indexes
Codes = dict[tuple[str, int], ErrorCode]


def _partition_errors(authorizer: AccessChecks, lookup: TopicLookup, topics: Topics) -> Codes:
    """Per partition, why it cannot be added; empty when all can."""
    unwritable = authorizer.denied_names(Operation.WRITE, ResourceType.TOPIC, (t.name for t in topics))
    refused = {}
    for t in topics:
        topic = lookup.topics.get(t.name)  # not a key-lookup view: those take no writes
        for index in t.partitions:
            if t.name in unwritable:
                refused[(t.name, index)] = ErrorCode.topic_authorization_failed
            elif topic is None or not 0 <= index < len(topic.partitions):
                refused[(t.name, index)] = ErrorCode.unknown_topic_or_partition
    return refused


async def _codes(ctx: ApiContext, header: RequestHeader, txn_id: str, producer_id: int, producer_epoch: int,
                 topics: Topics, verify_only: bool) -> Codes:
    """Per partition of one transaction, the answer's error."""
    wanted: list[tuple[str, int]] = [(t.name, i) for t in topics for i in t.partitions]
    refused = _partition_errors(ctx.authorizer, ctx.topics, topics)
    if refused:
        return {p: refused.get(p, ErrorCode.operation_not_attempted) for p in wanted}
    if verify_only:
        codes = ctx.transactions.verify_partitions(txn_id, producer_id, producer_epoch, set(wanted))
        if header.api_version < FIRST_TRANSACTION_ABORTABLE:
            codes = {p: ErrorCode.invalid_txn_state if c is ErrorCode.transaction_abortable else c for p, c in codes.items()}
        return codes
    # Kafka's transactionVersionForAddPartitionsToTxn: only a broker sends v4+, for a V2 client.
    from_broker = header.api_version >= FIRST_BROKER_VERSION
    code = await ctx.transactions.add_partitions(txn_id, producer_id, producer_epoch, set(wanted),
                                                 client_version=2 if from_broker else 0,
                                                 connection=None if from_broker else current_connection_id())
    return dict.fromkeys(wanted, for_version(code, header))


def _topic_results(cls: type, topics: Topics, codes: Codes) -> tuple[Any, ...]:
    topic_cls = nested(cls, "AddPartitionsToTxnTopicResult")
    part_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    return tuple(
        make(topic_cls, name=t.name, results_by_partition=tuple(
            make(part_cls, partition_index=i, partition_error_code=codes[(t.name, i)]) for i in t.partitions))
        for t in topics)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if header.api_version >= FIRST_BROKER_VERSION:
        return await _handle_brokers(ctx, header, request, cls)
    txn_id = request.v3_and_below_transactional_id
    topics = request.v3_and_below_topics
    if not ctx.authorizer.transactional_id_allowed(Operation.WRITE, txn_id):
        codes = {(t.name, i): ErrorCode.transactional_id_authorization_failed for t in topics for i in t.partitions}
    else:
        codes = await _codes(ctx, header, txn_id, request.v3_and_below_producer_id,
                             request.v3_and_below_producer_epoch, topics, verify_only=False)
    return make(cls, throttle_time=NO_THROTTLE, results_by_topic_v3_and_below=_topic_results(cls, topics, codes))


async def _handle_brokers(ctx: ApiContext, header: RequestHeader, request: Request, cls: type) -> Answer:
    if not ctx.authorizer.cluster_allowed(Operation.CLUSTER_ACTION):
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    results_by_transaction=())
    result_cls = nested(cls, "AddPartitionsToTxnResult")
    results = []
    for txn in request.transactions:
        codes = await _codes(ctx, header, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics,
                             txn.verify_only)
        results.append(make(result_cls, transactional_id=txn.transactional_id,
                            topic_results=_topic_results(cls, txn.topics, codes)))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results_by_transaction=tuple(results))
