"""DeleteTopics v1-v6: by name, or (v6) by topic id.

A deleted topic's partitions count against the client's controller_mutation_rate (KIP-599): from
v5 a topic asked for while the client is over it fails THROTTLING_QUOTA_EXCEEDED; every version
is answered with the throttle time (broker/quotas/enforcement.py)."""

from __future__ import annotations

import uuid

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.topic_names import TopicError, check_internal_change
from broker.security.acl.model import Operation
from broker.api.response_builder import make, nested
from broker.quotas.enforcement import THROTTLED_MUTATION, MutationQuota

STRICT_QUOTA_SINCE = 5


def _targets(request: Request) -> list[tuple[str | None, uuid.UUID | None]]:
    """(name or None, topic_id or None) pairs, whatever the version's shape."""
    if hasattr(request, "topic_names"):
        return [(name, None) for name in request.topic_names]
    return [(t.name, t.topic_id if t.topic_id and t.topic_id.int else None) for t in request.topics]


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "DeletableTopicResult")
    results = []
    quota = MutationQuota(ctx.mutation_quotas, header, STRICT_QUOTA_SINCE)
    for name, topic_id in _targets(request):
        if name is None:
            if topic_id is None:  # v6: as Kafka's ControllerApis.deleteTopics
                results.append(make(result_cls, name=None, topic_id=None, error_code=ErrorCode.invalid_request,
                                    error_message="Neither topic name nor id were specified."))
                continue
            topic = ctx.topics.by_id.get(topic_id)
            if topic is None:
                results.append(make(result_cls, name=None, topic_id=topic_id, error_code=ErrorCode.unknown_topic_id,
                                    error_message="Topic id is unknown"))
                continue
            name = topic.name
        try:
            if not ctx.authorizer.topic_allowed(Operation.DELETE, name):  # ACLs, as Kafka's handleDeleteTopicsRequest
                raise TopicError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            check_internal_change(name, ctx.config.allow_internal_topic_changes, "deleted")
            existing = ctx.topics.get(name)
            if existing is None:
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist")
            if not quota.admit(len(existing.partitions)):
                raise TopicError(*THROTTLED_MUTATION)
            await ctx.topic_admin.delete_topic(name)
            results.append(make(result_cls, name=name, topic_id=existing.topic_id, error_code=ErrorCode.none,
                                error_message=None))
        except TopicError as exc:
            results.append(make(result_cls, name=name, topic_id=topic_id, error_code=exc.code,
                                error_message=str(exc)))
    return make(cls, throttle_time=quota.throttle(), responses=tuple(results))
