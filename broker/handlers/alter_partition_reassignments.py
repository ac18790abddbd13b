"""AlterPartitionReassignments v0-v1 (KIP-455): give partitions new replica lists, or cancel the
reassignment in progress (null replicas).

The cluster view writes each partition's change (broker/cluster/reassignment.py: the new
replicas are added, catch up into the ISR, then the old ones go) and the answer waits until this
broker's metadata shows the writes, within the request's timeout; the move itself goes on after
the answer, as in Kafka (ListPartitionReassignments shows it). One broker is the whole cluster
(single_broker_view.py): the only list it can be given is [itself], which changes nothing, and
the same rules answer the rest (an empty list, a broker twice or an unknown broker:
INVALID_REPLICA_ASSIGNMENT; a cancel: NO_REASSIGNMENT_IN_PROGRESS). v1's allow_replication_factor_change=false refuses a list whose
length differs from the partition's replication factor (INVALID_REPLICATION_FACTOR), and is
echoed in the response.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Sequence

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import PartitionState
from broker.cluster.view import ClusterView
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested

log = logging.getLogger(__name__)


async def _alter(lookup: TopicLookup, view: ClusterView, topic: str, index: int, target: Sequence[int] | None,
                 allow_rf_change: bool) -> PartitionState | None:
    """The state written (None: nothing to change); raises ClusterError with Kafka's refusal."""
    local = lookup.topics.get(topic)  # a cluster member lists every topic of its image
    if local is None:
        raise ClusterError(ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {topic}.")
    if not 0 <= index < len(local.partitions):
        raise ClusterError(ErrorCode.unknown_topic_or_partition, f"Unable to find partition {topic}:{index}.")
    return await view.reassign(topic, index, target, allow_rf_change)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls, partition_cls = nested(cls, "ReassignableTopicResponse"), nested(cls, "ReassignablePartitionResponse")
    allow_rf_change: bool = getattr(request, "allow_replication_factor_change", True)  # v0 always allows it
    if not ctx.authorizer.cluster_allowed(Operation.ALTER):  # ACLs, as Kafka's handleAlterPartitionReassignments
        return make(cls, throttle_time=NO_THROTTLE, allow_replication_factor_change=allow_rf_change,
                    error_code=ErrorCode.cluster_authorization_failed, error_message="Cluster authorization failed.", responses=())
    responses, written = [], []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            try:
                state = await _alter(ctx.topics, ctx.view, topic.name, p.partition_index, p.replicas, allow_rf_change)
                code, message = ErrorCode.none, None
                if state is not None:
                    written.append(state)
            except ClusterError as exc:
                code, message = exc.code, str(exc)
            partitions.append(make(partition_cls, partition_index=p.partition_index, error_code=code,
                                   error_message=message))
        responses.append(make(topic_cls, name=topic.name, partitions=tuple(partitions)))
    if written:
        timeout = max(request.timeout.total_seconds(), 0.1)
        try:
            await ctx.view.wait_until_shown(written, timeout)
        except asyncio.TimeoutError:
            log.warning("reassignments written to etcd not yet in this broker's metadata after %.1f s", timeout)
    return make(cls, throttle_time=NO_THROTTLE, allow_replication_factor_change=allow_rf_change,
                error_code=ErrorCode.none, error_message=None, responses=tuple(responses))
