"""CreatePartitions v0-v3: grow a topic's partition count (never shrink).

The partitions added count against the client's controller_mutation_rate (KIP-599): from v3 a
topic asked for while the client is over it fails THROTTLING_QUOTA_EXCEEDED; every version is
answered with the throttle time (broker/quotas/enforcement.py)."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.settings.config import BrokerConfig
from broker.topic_names import TopicError, check_internal_change
from broker.handlers.partition_limits import BATCH_REFUSAL, MAX_PARTITIONS_PER_REQUEST
from broker.security.acl.model import Operation
from broker.api.response_builder import make, nested
from broker.quotas.enforcement import THROTTLED_MUTATION, MutationQuota

STRICT_QUOTA_SINCE = 3


def _check(config: BrokerConfig, lookup: TopicLookup, view: ClusterView, topic: Request, budget: int) -> int:
    """Returns how many partitions the topic gains, or raises TopicError. `budget` is what the
    request may still create (partition_limits.py)."""
    check_internal_change(topic.name, config.allow_internal_topic_changes, "given more partitions")
    existing = lookup.get(topic.name)
    if existing is None:
        raise TopicError(ErrorCode.unknown_topic_or_partition, f"The topic '{topic.name}' does not exist.")
    current = len(existing.partitions)
    if topic.count < current:
        raise TopicError(ErrorCode.invalid_partitions,
                         f"Topic currently has {current} partitions, which is higher than the requested {topic.count}.")
    if topic.count == current:
        raise TopicError(ErrorCode.invalid_partitions, f"Topic already has {current} partitions.")
    if topic.assignments is not None:
        if len(topic.assignments) != topic.count - current:
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             f"Increasing the number of partitions by {topic.count - current} but {len(topic.assignments)} assignments provided.")
        live = {b.node_id for b in view.brokers()}
        for a in topic.assignments:
            ids = list(a.broker_ids)
            if not ids or len(set(ids)) != len(ids) or not set(ids) <= live:
                raise TopicError(ErrorCode.invalid_replica_assignment, f"Unknown or duplicate broker ids in assignment {ids}")
    if topic.count - current > budget:
        raise TopicError(ErrorCode.policy_violation, BATCH_REFUSAL)
    added: int = topic.count - current
    return added


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "CreatePartitionsTopicResult")
    results = []
    seen = set()
    budget = MAX_PARTITIONS_PER_REQUEST
    quota = MutationQuota(ctx.mutation_quotas, header, STRICT_QUOTA_SINCE)
    for topic in request.topics:
        try:
            if topic.name in seen:
                raise TopicError(ErrorCode.invalid_request, f"Duplicate topic {topic.name} in the request.")
            seen.add(topic.name)
            if not ctx.authorizer.topic_allowed(Operation.ALTER, topic.name):  # ACLs, as Kafka's handleCreatePartitionsRequest
                raise TopicError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            added = _check(ctx.config, ctx.topics, ctx.view, topic, budget)
            budget -= added
            if not request.validate_only and not quota.admit(added):
                raise TopicError(*THROTTLED_MUTATION)
            if not request.validate_only:
                assignments = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
                await ctx.topic_admin.add_partitions(topic.name, topic.count, assignments)
            results.append(make(result_cls, name=topic.name, error_code=ErrorCode.none, error_message=None))
        except TopicError as exc:
            results.append(make(result_cls, name=topic.name, error_code=exc.code, error_message=str(exc)))
    return make(cls, throttle_time=quota.throttle(), results=tuple(results))
