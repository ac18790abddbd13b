"""ListPartitionReassignments v0 (KIP-455): the reassignments in progress, each with the
partition's replicas (old and new together while it lasts), the ones being added and the ones
being removed.

The cluster view has them (a cluster member in its metadata image: the `adding` / `removing` of
a partition state, broker/cluster/reassignment.py); one broker never has any. As KRaft's controller: null
topics lists every ongoing reassignment; named topics list only their named partitions that have
one, and an unknown topic or partition is left out rather than refused.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.cluster.etcd_layout import PartitionState
from broker.cluster.view import ClusterView
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


def _ongoing(view: ClusterView, request: Request) -> dict[str, list[PartitionState]]:
    """topic -> its partition states with a reassignment in progress, in partition order."""
    wanted = None if request.topics is None else [(t.name, t.partition_indexes) for t in request.topics]
    return view.reassignments_in_progress(wanted)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "OngoingTopicReassignment")
    partition_cls = nested(cls, "OngoingPartitionReassignment")
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE):  # ACLs, as Kafka's handleListPartitionReassignments
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    error_message="Cluster authorization failed.", topics=())
    topics = tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(partition_cls, partition_index=s.index, replicas=s.replicas, adding_replicas=s.adding,
                 removing_replicas=s.removing)
            for s in states))
        for name, states in _ongoing(ctx.view, request).items())
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=topics)
