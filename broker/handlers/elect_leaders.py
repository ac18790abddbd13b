"""ElectLeaders v0-v2: move leadership to the preferred replica (KIP-183), or elect one for an
offline partition from any live replica (unclean, KIP-460; v1+).

The cluster view writes each election (a cluster member to etcd, ClusterMetadata.elect_preferred
/ elect_unclean, compare-and-swap on the partition's state) and the answer waits until this
broker's metadata shows the writes, within the request's timeout. One broker is the whole
cluster (single_broker_view.py): it leads every partition as its only, preferred replica, so the
same rules (leader_election.py) answer ELECTION_NOT_NEEDED.

As KRaft's controller answers: a partition that needs no election is ELECTION_NOT_NEEDED; when
the request names no partitions (null), every partition is tried and those are left out, each
topic still listed; an unknown election type fails every named partition and the request
(INVALID_REQUEST).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterable

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

PREFERRED, UNCLEAN = 0, 1


def _every_partition(lookup: TopicLookup) -> list[tuple[str, Iterable[int]]]:
    return [(name, range(len(topic.partitions))) for name, topic in sorted(lookup.topics.items())]


async def _elect(lookup: TopicLookup, view: ClusterView, topic: str, index: int, election: int
                 ) -> PartitionState | None:
    """The state written; raises ClusterError with Kafka's answer when there is none."""
    local = lookup.topics.get(topic)  # a cluster member lists every topic of its image
    if local is None:
        raise ClusterError(ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}")
    if not 0 <= index < len(local.partitions):
        raise ClusterError(ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-{index}")
    return await view.elect(topic, index, unclean=election == UNCLEAN)


async def _until_visible(view: ClusterView, written: list[PartitionState], timeout_s: float) -> None:
    if not written:
        return
    try:
        await view.wait_until_shown(written, max(timeout_s, 0.1))
    except asyncio.TimeoutError:
        log.warning("elections written to etcd not yet in this broker's metadata after %.1f s", timeout_s)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls, partition_cls = nested(cls, "ReplicaElectionResult"), nested(cls, "PartitionResult")
    election: int = getattr(request, "election_type", PREFERRED)  # v0 elects the preferred replica
    refusal: tuple[ErrorCode, str] | None = None
    if not ctx.authorizer.cluster_allowed(Operation.ALTER):  # ACLs, as Kafka's handleElectLeaders
        refusal = ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
    elif election not in (PREFERRED, UNCLEAN):
        refusal = ErrorCode.invalid_request, f"Unknown election type {election}"
    if refusal is not None:
        refused = tuple(
            make(topic_cls, topic=t.topic, partition_result=tuple(
                make(partition_cls, partition_id=i, error_code=refusal[0], error_message=refusal[1])
                for i in t.partitions))
            for t in request.topic_partitions or ())
        return make(cls, throttle_time=NO_THROTTLE, error_code=refusal[0],
                    replica_election_results=refused)

    every = request.topic_partitions is None
    wanted = _every_partition(ctx.topics) if every else [(t.topic, t.partitions) for t in request.topic_partitions]
    results, written = [], []
    for topic, indexes in wanted:
        partitions = []
        for index in indexes:
            try:
                state = await _elect(ctx.topics, ctx.view, topic, index, election)
                code, message = ErrorCode.none, None
                if state is not None:
                    written.append(state)
            except ClusterError as exc:
                code, message = exc.code, str(exc)
            if every and code is ErrorCode.election_not_needed:
                continue
            partitions.append(make(partition_cls, partition_id=index, error_code=code, error_message=message))
        results.append(make(topic_cls, topic=topic, partition_result=tuple(partitions)))
    await _until_visible(ctx.view, written, request.timeout.total_seconds())
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, replica_election_results=tuple(results))
