"""EndTxn v0-v4: a transactional producer commits or aborts its transaction.

WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as Kafka's
handleEndTxnRequest; then the coordinator's answer (broker/txn/coordinator.py), given once the
PrepareCommit / PrepareAbort is replicated: the markers follow in the background. v5 is not
served: it is the epoch bump per transaction of KIP-890's transactions V2, which this broker
does not advertise (no `transaction.version` feature), so no client sends it.
"""

from __future__ import annotations

from wire.protocol import response_for

from broker.security.acl.checks import transactional_id_allowed
from broker.security.acl.model import Operation
from broker.handlers.response_builder import NO_THROTTLE, error, make
from broker.handlers.txn_errors import for_version


async def handle(broker, header, request):
    cls = response_for(header)
    if not transactional_id_allowed(broker, Operation.WRITE, request.transactional_id):
        code = "transactional_id_authorization_failed"
    else:
        code = await broker.transactions.end_txn(request.transactional_id, request.producer_id,
                                                 request.producer_epoch, request.committed)
    return make(cls, throttle_time=NO_THROTTLE, error_code=error(for_version(code, header)))
