"""DescribeTransactions v0: the state of transactional ids this broker coordinates (what
`kafka-transactions.sh describe` shows).

Per id, as Kafka's handleDescribeTransactionsRequest: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
without DESCRIBE on it, NOT_COORDINATOR for an id coordinated elsewhere,
TRANSACTIONAL_ID_NOT_FOUND for one never initialised; else its state, timeout, producer, the
start of its open transaction (-1: none) and its partitions.
"""

from __future__ import annotations

import datetime

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.txn.metadata import TxnMetadata


def _time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    state_cls = nested(cls, "TransactionState")
    topic_cls = nested(cls, "TopicData")
    states = []
    for txn_id in request.transactional_ids:
        meta: TxnMetadata | None
        if not ctx.authorizer.transactional_id_allowed(Operation.DESCRIBE, txn_id):
            code, meta = ErrorCode.transactional_id_authorization_failed, None
        else:
            code, meta = ctx.transactions.describe(txn_id)
        if meta is None:
            states.append(make(state_cls, error_code=code, transactional_id=txn_id, transaction_state="",
                               transaction_timeout=datetime.timedelta(0), transaction_start_time=_time(-1),
                               producer_id=-1, producer_epoch=-1, topics=()))
            continue
        topics = tuple(make(topic_cls, topic=t, partitions=indexes) for t, indexes in meta.record.partitions)
        states.append(make(state_cls, error_code=ErrorCode.none, transactional_id=txn_id,
                           transaction_state=meta.state.kafka_name,
                           transaction_timeout=datetime.timedelta(milliseconds=meta.timeout_ms),
                           transaction_start_time=_time(meta.record.start_ms), producer_id=meta.producer_id,
                           producer_epoch=meta.producer_epoch, topics=topics))
    return make(cls, throttle_time=NO_THROTTLE, transaction_states=tuple(states))
