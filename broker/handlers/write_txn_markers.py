"""WriteTxnMarkers v1-v2: the transaction coordinator's call that ends a transaction in each of
its partitions with a COMMIT or ABORT marker (Kafka's handleWriteTxnMarkersRequest).

Only a broker may call it: without CLUSTER_ACTION on the cluster every partition answers
CLUSTER_AUTHORIZATION_FAILED. Each marker is appended and awaited as
broker/txn/marker_append.py does for a local coordinator; the partitions of a request are
written together. v2's transaction_version changes nothing here: a marker is checked the same
way for either transaction protocol.
"""

from __future__ import annotations

import asyncio

from wire.protocol import response_for

from broker.security.acl.checks import cluster_allowed
from broker.security.acl.model import Operation
from broker.handlers.response_builder import error, make, nested
from broker.txn.marker_append import append_marker


async def handle(broker, header, request):
    cls = response_for(header)
    marker_cls = nested(cls, "WritableTxnMarkerResult")
    topic_cls = nested(cls, "WritableTxnMarkerTopicResult")
    part_cls = nested(cls, "WritableTxnMarkerPartitionResult")
    refused = not cluster_allowed(broker, Operation.CLUSTER_ACTION)
    jobs = [(m, t.name, i) for m in request.markers for t in m.topics for i in t.partition_indexes]
    if refused:
        codes = ["cluster_authorization_failed"] * len(jobs)
    else:  # partitions in order, each awaited for its replication together
        pending = []
        for marker, name, index in jobs:
            pending.append(asyncio.ensure_future(append_marker(
                broker, name, index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                commit=marker.transaction_result)))
        codes = await asyncio.gather(*pending)
    answers = iter(codes)
    markers = []
    for m in request.markers:
        topics = tuple(make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=i, error_code=error(next(answers))) for i in t.partition_indexes))
            for t in m.topics)
        markers.append(make(marker_cls, producer_id=m.producer_id, topics=topics))
    return make(cls, markers=tuple(markers))
