"""OffsetCommit v2-v10: checked against the group's generation (a consumer-protocol group's: the
member epoch), then written to __consumer_offsets.

v10 names each topic by its id (offset_topic_ids.py): an id unknown here answers
UNKNOWN_TOPIC_ID on its partitions and the others are committed, as Kafka's
handleOffsetCommitRequest does; a group not authorized still fails every partition first."""

from __future__ import annotations

from typing import Iterator

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.offsets import OffsetToCommit
from broker.handlers.offset_topic_ids import requested_name
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "OffsetCommitResponseTopic")
    part_cls = nested(cls, "OffsetCommitResponsePartition")
    names = [requested_name(ctx.topics, t) for t in request.topics]  # None: a v10 id unknown here
    known = [name for name in names if name is not None]
    # ACLs, as Kafka's handleOffsetCommitRequest: READ on the group, else every partition fails;
    # READ on each topic, else its partitions fail and the others are committed
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):
        refusals = {name: ErrorCode.group_authorization_failed for name in names}
    else:
        refusals = {name: ErrorCode.topic_authorization_failed
                    for name in ctx.authorizer.denied_names(Operation.READ, ResourceType.TOPIC, known)}
        refusals[None] = ErrorCode.unknown_topic_id
    wanted = [
        OffsetToCommit(name, p.partition_index, p.committed_offset,
                       getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
        for t, name in zip(request.topics, names) if name is not None and name not in refusals for p in t.partitions
    ]
    if not wanted and any(name in refusals for name in names):
        codes: Iterator[ErrorCode] = iter(())
    else:  # a consumer or streams group checks its member's epoch, a classic group the generation
        codes = iter(await ctx.groups.commit_offsets(
            request.group_id, request.generation_id_or_member_epoch, request.member_id,
            getattr(request, "group_instance_id", None), header.api_version, wanted))
    topics = tuple(
        make(topic_cls, name=name, topic_id=getattr(t, "topic_id", None), partitions=tuple(
            make(part_cls, partition_index=p.partition_index,
                 error_code=refusals[name] if name in refusals else next(codes))
            for p in t.partitions))
        for t, name in zip(request.topics, names)
    )
    return make(cls, throttle_time=NO_THROTTLE, topics=topics)
