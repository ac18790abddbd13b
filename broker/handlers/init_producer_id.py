"""InitProducerId: a producer id and epoch, for an idempotent producer or a transactional one.

Without a transactional id: a fresh id at epoch 0 (IDEMPOTENT_WRITE on the cluster, or WRITE on
any topic, as Kafka's handleInitProducerIdRequest). With one: the transaction coordinator's
answer (broker/txn/coordinator.py) after WRITE on the transactional id — the id's producer with
its epoch bumped, which fences any older producer of the id; v3+ name the producer asking, so a
producer recovering from an error keeps its id (KIP-360). An empty transactional id is
INVALID_REQUEST, as Kafka's. A cluster member that cannot get a producer-id block from etcd
answers the retriable COORDINATOR_LOAD_IN_PROGRESS, as Kafka's broker waiting for one.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make
from broker.handlers.txn_errors import for_version, ms
from broker.producer_ids import NoProducerIdBlock


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)

    def answer(code: ErrorCode, producer_id: int = -1, producer_epoch: int = -1) -> Answer:
        return make(cls, throttle_time=NO_THROTTLE, error_code=for_version(code, header),
                    producer_id=producer_id, producer_epoch=producer_epoch)

    txn_id = request.transactional_id
    if txn_id is not None:
        if not txn_id:
            return answer(ErrorCode.invalid_request)
        if not ctx.authorizer.transactional_id_allowed(Operation.WRITE, txn_id):
            return answer(ErrorCode.transactional_id_authorization_failed)
        result = await ctx.transactions.init_producer_id(
            txn_id, ms(request.transaction_timeout), getattr(request, "producer_id", -1),
            getattr(request, "producer_epoch", -1))
        return answer(result.error, result.producer_id, result.producer_epoch)
    if not (ctx.authorizer.cluster_allowed(Operation.IDEMPOTENT_WRITE)
            or ctx.authorizer.allowed_on_any(Operation.WRITE, ResourceType.TOPIC)):
        return answer(ErrorCode.cluster_authorization_failed)
    try:
        pid = await ctx.transactions.allocate_producer_id()
    except NoProducerIdBlock as exc:
        return answer(exc.code)
    return answer(ErrorCode.none, pid, 0)
