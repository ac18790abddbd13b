"""What the share-state RPCs (Read / Write / Initialize / DeleteShareGroupState and
ReadShareGroupStateSummary, KIP-932's calls from a share-partition's leader or the group
coordinator to the share coordinator) share: who may call them, and one answer per
partition asked about, each from the share coordinator (broker/groups/share/state_coordinator.py).

Only a broker may call them: without CLUSTER_ACTION on the cluster every partition answers
CLUSTER_AUTHORIZATION_FAILED (Kafka's handlers check the same). A key this broker does not
coordinate is NOT_COORDINATOR; the caller looks the coordinator up again (FindCoordinator, key
type share).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, TypeAlias

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, Request
from broker.groups.share.state_coordinator import StateAnswer
from broker.groups.share.state_log import Key
from broker.api.response_builder import make, nested
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation

Ask: TypeAlias = Callable[[Key, Any], Awaitable[StateAnswer]]  # (key, the request's PartitionData) -> answer
Fields: TypeAlias = Callable[[StateAnswer, type], dict[str, Any]]  # (answer, response class) -> more fields


def no_fields(got: StateAnswer, cls: type) -> dict[str, Any]:
    return {}


async def answer(authorizer: AccessChecks, header: RequestHeader, request: Request, result_entry: str,
                 ask: Ask, fields: Fields = no_fields) -> Answer:
    """The response: per topic `result_entry`s, per partition the coordinator's answer to `ask`,
    with `fields(answer, response class)` added to each partition's result."""
    cls = response_for(header)
    topic_cls, part_cls = nested(cls, result_entry), nested(cls, "PartitionResult")
    refused = not authorizer.cluster_allowed(Operation.CLUSTER_ACTION)
    results = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            if refused:
                got = StateAnswer(ErrorCode.cluster_authorization_failed)
            else:
                got = await ask((request.group_id, t.topic_id, p.partition), p)
            parts.append(make(part_cls, partition=p.partition, error_code=got.error,
                              error_message=got.message, **fields(got, cls)))
        results.append(make(topic_cls, topic_id=t.topic_id, partitions=tuple(parts)))
    return make(cls, results=tuple(results))
