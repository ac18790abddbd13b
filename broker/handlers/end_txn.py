"""EndTxn v0-v5: a transactional producer commits or aborts its transaction.

WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as Kafka's
handleEndTxnRequest; then the coordinator's answer (broker/txn/coordinator.py), given once the
PrepareCommit / PrepareAbort is replicated: the markers follow in the background. v5 is
transactions V2 (KIP-890, Kafka's transactionVersionForEndTxn): the end bumps the producer's
epoch and the answer carries the producer id and epoch to go on with; -1 for both with an
error, as Kafka answers. Which answer, per version, state, epoch and timing: broker/txn/end_table.py;
and one not Kafka's: a v0-v4 end that came on a connection older than the one that began the
open transaction is a late copy of an earlier end, PRODUCER_FENCED (broker/txn/txn_shard.py).
The connection is the request's (broker/net/request_context.py).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make
from broker.handlers.txn_errors import for_version
from broker.net.request_context import current_connection_id
from broker.txn.txn_ops import EndResult

FIRST_V2_VERSION = 5


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if not ctx.authorizer.transactional_id_allowed(Operation.WRITE, request.transactional_id):
        result = EndResult(ErrorCode.transactional_id_authorization_failed)
    else:
        result = await ctx.transactions.end_txn(request.transactional_id, request.producer_id,
                                                request.producer_epoch, request.committed,
                                                v2=header.api_version >= FIRST_V2_VERSION,
                                                connection=current_connection_id())
    return make(cls, throttle_time=NO_THROTTLE, error_code=for_version(result.error, header),
                producer_id=result.producer_id, producer_epoch=result.producer_epoch)
