"""ReadShareGroupStateSummary v0-v1 (KIP-932): the group coordinator reads share-partitions' state
epoch, leader epoch and start offset at their share coordinator, for DescribeShareGroupOffsets;
v1 adds DeliveryCompleteCount (KIP-1226: the records past the start offset that are done with,
counted from the kept state batches). Unlike ReadShareGroupState it records no leader epoch. A
share-partition with no state answers start offset -1 and DeliveryCompleteCount -1, as Kafka's.
Callers need CLUSTER_ACTION (share_state_answers.py).
"""

from __future__ import annotations

from typing import Any

from wire.protocol import RequestHeader
from broker.api.context import Answer, ApiContext, Request
from broker.groups.share import state_log
from broker.groups.share.state_coordinator import StateAnswer
from broker.handlers.share_state_answers import answer


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    coordinator = ctx.share_states

    def fields(got: StateAnswer, cls: type) -> dict[str, Any]:
        if got.state is None:
            return {"state_epoch": -1, "leader_epoch": -1, "start_offset": -1, "delivery_complete_count": -1}
        s = state_log.summary_of(got.state)
        return {"state_epoch": s.state_epoch, "leader_epoch": s.leader_epoch, "start_offset": s.start_offset,
                "delivery_complete_count": s.delivery_complete_count}

    return await answer(ctx.authorizer, header, request, "ReadStateSummaryResult",
                        lambda key, p: coordinator.summary(key), fields)
