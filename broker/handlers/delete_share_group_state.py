"""DeleteShareGroupState v0 (KIP-932): the group coordinator removes share-partitions' state at
their share coordinator (a tombstone in `__share_group_state`, written before the answer). A key
with no state answers no error. Callers need CLUSTER_ACTION (share_state_answers.py).
"""

from __future__ import annotations

from wire.protocol import RequestHeader
from broker.api.context import Answer, ApiContext, Request
from broker.handlers.share_state_answers import answer


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    coordinator = ctx.share_states
    return await answer(ctx.authorizer, header, request, "DeleteStateResult", lambda key, p: coordinator.delete(key))
