"""InitProducerId for idempotent producers (no transactional id): a fresh id at epoch 0.

Transactions are not served yet: a request carrying a transactional id gets
COORDINATOR_NOT_AVAILABLE, which clients surface as "no transaction coordinator".
"""

from __future__ import annotations

from wire.protocol import response_for

from broker.security.acl.checks import allowed_on_any, cluster_allowed
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.response_builder import NO_THROTTLE, error, make


async def handle(broker, header, request):
    cls = response_for(header)
    if request.transactional_id is not None:
        return make(cls, throttle_time=NO_THROTTLE, error_code=error("coordinator_not_available"),
                    producer_id=-1, producer_epoch=-1)
    # ACLs, as Kafka's handleInitProducerIdRequest: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic
    if not (cluster_allowed(broker, Operation.IDEMPOTENT_WRITE)
            or allowed_on_any(broker, Operation.WRITE, ResourceType.TOPIC)):
        return make(cls, throttle_time=NO_THROTTLE, error_code=error("cluster_authorization_failed"),
                    producer_id=-1, producer_epoch=-1)
    pid = await broker.producer_ids.allocate()
    return make(cls, throttle_time=NO_THROTTLE, error_code=error("none"), producer_id=pid, producer_epoch=0)
