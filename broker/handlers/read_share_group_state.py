"""ReadShareGroupState v0 (KIP-932): a share-partition's leader reads the state the share
coordinator keeps for it, recording its leader epoch (an older one is FENCED_LEADER_EPOCH after).
A share-partition with no state answers start offset -1, state epoch 0, no batches, as Kafka's.
"""

from __future__ import annotations

from typing import Any

from wire.protocol import RequestHeader
from broker.api.context import Answer, ApiContext, Request
from broker.api.response_builder import make, nested
from broker.groups.share.state_coordinator import StateAnswer
from broker.handlers.share_state_answers import answer


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    coordinator = ctx.share_states

    def fields(got: StateAnswer, cls: type) -> dict[str, Any]:
        state = got.state
        if state is None:
            return {"state_epoch": -1, "start_offset": -1, "state_batches": ()}
        batch_cls = nested(cls, "StateBatch")
        return {"state_epoch": state.state_epoch, "start_offset": state.start_offset, "state_batches": tuple(
            make(batch_cls, first_offset=b.first, last_offset=b.last, delivery_state=int(b.state),
                 delivery_count=b.delivery_count) for b in state.batches)}

    return await answer(ctx.authorizer, header, request, "ReadStateResult",
                        lambda key, p: coordinator.read(key, p.leader_epoch), fields)
