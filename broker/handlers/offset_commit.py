"""OffsetCommit v2+: checked against the group's generation (a consumer-protocol group's: the
member epoch), then written to __consumer_offsets."""

from __future__ import annotations

from wire.protocol import response_for

from broker.groups import offsets
from broker.groups.consumer import classic_apis
from broker.security.acl.checks import denied_names, group_allowed
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    topic_cls = nested(cls, "OffsetCommitResponseTopic")
    part_cls = nested(cls, "OffsetCommitResponsePartition")
    # ACLs, as Kafka's handleOffsetCommitRequest: READ on the group, else every partition fails;
    # READ on each topic, else its partitions fail and the others are committed
    if not group_allowed(broker, Operation.READ, request.group_id):
        refused = frozenset(t.name for t in request.topics)
        refusal = "group_authorization_failed"
    else:
        refused = denied_names(broker, Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
        refusal = "topic_authorization_failed"
    wanted = [
        offsets.OffsetToCommit(t.name, p.partition_index, p.committed_offset,
                               getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
        for t in request.topics if t.name not in refused for p in t.partitions
    ]
    consumer_group = broker.consumer_groups.groups.get(request.group_id)
    if not wanted and refused:
        codes = iter(())
    elif consumer_group is not None:  # a KIP-848 group: member epochs
        codes = iter(await classic_apis.commit(
            broker.consumer_groups, broker, consumer_group, request.member_id,
            request.generation_id_or_member_epoch, header.api_version, wanted))
    else:
        codes = iter(await offsets.commit(
            broker.groups, broker, request.group_id, request.generation_id_or_member_epoch,
            request.member_id, getattr(request, "group_instance_id", None), wanted))
    topics = tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index,
                 error_code=error(refusal if t.name in refused else next(codes)))
            for p in t.partitions))
        for t in request.topics
    )
    return make(cls, throttle_time=NO_THROTTLE, topics=topics)
