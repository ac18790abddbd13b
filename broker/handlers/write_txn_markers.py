"""WriteTxnMarkers v1-v2: the transaction coordinator's call that ends a transaction in each of
its partitions with a COMMIT or ABORT marker (Kafka's handleWriteTxnMarkersRequest).

Only a broker may call it: without CLUSTER_ACTION on the cluster every partition answers
CLUSTER_AUTHORIZATION_FAILED. The markers are appended and awaited as
broker/txn/marker_append.py does for a local coordinator: the partitions of a request are
written together, under one group commit. v2's transaction_version changes nothing here: a marker is checked the same
way for either transaction protocol.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import make, nested
from broker.txn.marker_append import Marker


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    marker_cls = nested(cls, "WritableTxnMarkerResult")
    topic_cls = nested(cls, "WritableTxnMarkerTopicResult")
    part_cls = nested(cls, "WritableTxnMarkerPartitionResult")
    refused = not ctx.authorizer.cluster_allowed(Operation.CLUSTER_ACTION)
    jobs = [(m, t.name, i) for m in request.markers for t in m.topics for i in t.partition_indexes]
    if refused:
        codes = [ErrorCode.cluster_authorization_failed] * len(jobs)
    else:  # partitions in order, appended together (one group commit), each awaited for its replication
        codes = await ctx.transactions.write_markers([
            Marker(name, index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                   marker.transaction_result) for marker, name, index in jobs])
    answers = iter(codes)
    markers = []
    for m in request.markers:
        topics = tuple(make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=i, error_code=next(answers)) for i in t.partition_indexes))
            for t in m.topics)
        markers.append(make(marker_cls, producer_id=m.producer_id, topics=topics))
    return make(cls, markers=tuple(markers))
