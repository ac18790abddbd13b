"""InitializeShareGroupState v0 (KIP-932): the state of a share-partition begins (or begins again,
at a higher state epoch): its start offset, no records in flight. A state epoch not above the
kept one is FENCED_STATE_EPOCH.
"""

from __future__ import annotations

from wire.protocol import RequestHeader
from broker.api.context import Answer, ApiContext, Request
from broker.handlers.share_state_answers import answer


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    coordinator = ctx.share_states
    return await answer(ctx.authorizer, header, request, "InitializeStateResult",
                        lambda key, p: coordinator.initialize(key, p.state_epoch, p.start_offset))
