"""AddOffsetsToTxn: a transactional producer will commit a group's offsets in its transaction
(sendOffsetsToTransaction), so the group's `__consumer_offsets` partition joins the transaction
and gets its marker at the end.

ACLs as Kafka's handleAddOffsetsToTxnRequest: WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.coordinator_topics import CoordinatorKind
from broker.groups import offsets_log
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make
from broker.handlers.txn_errors import for_version
from broker.net.request_context import current_connection_id


async def _add(ctx: ApiContext, request: Request) -> ErrorCode:
    if not ctx.authorizer.transactional_id_allowed(Operation.WRITE, request.transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):
        return ErrorCode.group_authorization_failed
    topic = await ctx.coordinator_topics[CoordinatorKind.GROUP].ensure_topic()
    if topic is None:
        return ErrorCode.coordinator_not_available
    index = offsets_log.partition_for(request.group_id, len(topic.partitions))
    return await ctx.transactions.add_partitions(request.transactional_id, request.producer_id,
                                                 request.producer_epoch, {(offsets_log.TOPIC, index)},
                                                 client_version=0,  # Kafka's TV_0: a V1 client's call
                                                 connection=current_connection_id())


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    code = for_version(await _add(ctx, request), header)
    return make(cls, throttle_time=NO_THROTTLE, error_code=code)
