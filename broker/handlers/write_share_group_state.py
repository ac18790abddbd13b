"""WriteShareGroupState v0-v1 (KIP-932): a share-partition's leader stores its state: the start
offset (-1: unchanged) and the state batches, laid in order over what is kept, a later one winning
where they overlap (state_log.overlay), written to `__share_group_state` before the answer. v1's DeliveryCompleteCount (KIP-1226's
share-partition lag) is accepted and not kept: nothing twinlog serves reads it.
A batch in a state other than 0, 2 or 4 (Available, Acknowledged, Archived) is INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from wire.protocol import RequestHeader
from wire.error_codes import ErrorCode
from broker.api.context import Answer, ApiContext, Request
from broker.groups.share.share_partition import RecordState, StateRange
from broker.groups.share.state_coordinator import StateAnswer
from broker.groups.share.state_log import STORED_STATES, Key
from broker.handlers.share_state_answers import answer


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    coordinator = ctx.share_states

    async def ask(key: Key, p: Any) -> StateAnswer:
        if any(b.delivery_state not in STORED_STATES or b.last_offset < b.first_offset for b in p.state_batches):
            return StateAnswer(ErrorCode.invalid_request, "a state batch is empty or in a state that is not stored")
        batches = tuple(StateRange(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                        for b in p.state_batches)
        return await coordinator.write(key, p.state_epoch, p.leader_epoch, p.start_offset, batches)

    return await answer(ctx.authorizer, header, request, "WriteStateResult", ask)
