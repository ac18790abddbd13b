"""TxnOffsetCommit v0-v5: a transactional producer's consumed offsets, written into its transaction
(broker/groups/txn_offsets.py has the rules); they count once the transaction commits.

ACLs, as Kafka's handleTxnOffsetCommitRequest: WRITE on the transactional id, else every
partition fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else every
partition fails with GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions fail
and the others are committed. v3 adds the member, generation and instance id (checked as
OffsetCommit checks them; a consumer-protocol group's member epochs); v4 may answer
TRANSACTION_ABORTABLE; v5 comes from a client of transactions V2 (KIP-890), which sends no
AddOffsetsToTxn: the group coordinator adds the group's offsets partition to the producer's
transaction before writing (broker/groups/txn_offsets.py).
"""

from __future__ import annotations

from typing import Iterator

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.offsets import OffsetToCommit
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested

FIRST_V2_VERSION = 5  # Kafka's txnOffsetCommitRequestVersionToTransactionSupportedOperation: ADD_PARTITION


def _refusal(authorizer: AccessChecks, request: Request) -> ErrorCode | None:
    if not authorizer.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    if not authorizer.group_allowed(Operation.READ, request.group_id):
        return ErrorCode.group_authorization_failed
    return None


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "TxnOffsetCommitResponseTopic")
    part_cls = nested(cls, "TxnOffsetCommitResponsePartition")
    refusal = _refusal(ctx.authorizer, request)
    if refusal:
        refused = frozenset(t.name for t in request.topics)
    else:
        refused = ctx.authorizer.denied_names(Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
        refusal = ErrorCode.topic_authorization_failed
    wanted = [
        OffsetToCommit(t.name, p.partition_index, p.committed_offset,
                       getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
        for t in request.topics if t.name not in refused for p in t.partitions
    ]
    generation, member_id = getattr(request, "generation_id", -1), getattr(request, "member_id", "")
    enrol_in = request.transactional_id if header.api_version >= FIRST_V2_VERSION else None
    if not wanted:
        codes: Iterator[ErrorCode] = iter(())
    else:  # a consumer or streams group checks the member's epoch (the generation field)
        codes = iter(await ctx.groups.txn_commit_offsets(
            request.group_id, request.producer_id, request.producer_epoch, generation, member_id,
            getattr(request, "group_instance_id", None), wanted, enrol_in))
    topics = tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index,
                 error_code=refusal if t.name in refused else next(codes))
            for p in t.partitions))
        for t in request.topics
    )
    return make(cls, throttle_time=NO_THROTTLE, topics=topics)
