"""CreateTopics v2-v7: validate names, partition counts, replication and configs, then create.

A single broker can only hold one replica: replication_factor above 1 gets
INVALID_REPLICATION_FACTOR, as Kafka answers when brokers are too few.
Each topic succeeds or fails on its own; validate_only creates nothing. The valid topics are
created together (ctx.topic_admin.create_topics), their file work off the event loop.
Their partitions count against the client's controller_mutation_rate (KIP-599): from v6 a topic
asked for while the client is over it fails THROTTLING_QUOTA_EXCEEDED; every version is answered
with the throttle time (broker/quotas/enforcement.py).
"""

from __future__ import annotations

from collections import Counter

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.cluster.view import Assignments
from broker.settings.described_configs import topic_entries
from broker.settings.topic_configs import InvalidConfig, validate_topic_configs
from broker.topic import Topic
from broker.topic_names import TopicError, check_topic_name
from broker.handlers.partition_limits import CREATE_TOPICS_REFUSAL, MAX_PARTITIONS_PER_REQUEST, create_topics_total
from broker.security.acl.model import Operation
from broker.api.response_builder import make, nested
from broker.quotas.enforcement import THROTTLED_MUTATION, MutationQuota

STRICT_QUOTA_SINCE = 6

# (partitions, replication factor, explicit assignments or None, configs) of a topic that passed _check
Checked = tuple[int, int, Assignments | None, dict[str, str]]


def _check(ctx: ApiContext, topic: Request, duplicates: set[str], too_many_partitions: bool) -> Checked:
    """Returns the topic as it would be created, or raises TopicError."""
    if topic.name in duplicates:
        raise TopicError(ErrorCode.invalid_request, f"Create topics request from client contains the topic {topic.name} more than once.")
    if too_many_partitions:
        raise TopicError(ErrorCode.policy_violation, CREATE_TOPICS_REFUSAL)
    check_topic_name(topic.name)
    if ctx.topics.get(topic.name) is not None:
        raise TopicError(ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
    ctx.topic_admin.check_collision(topic.name)  # here too: validate_only never reaches create()
    live = {b.node_id for b in ctx.view.brokers()}
    assignments: Assignments | None = None
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise TopicError(ErrorCode.invalid_request, "Both numPartitions or replicationFactor and replicasAssignments were set.")
        ordered = sorted(topic.assignments, key=lambda a: a.partition_index)
        if [a.partition_index for a in ordered] != list(range(len(ordered))):
            raise TopicError(ErrorCode.invalid_replica_assignment, "Partitions should be consecutive and start from 0.")
        assignments = [list(a.broker_ids) for a in ordered]
        for ids in assignments:
            if not ids or len(set(ids)) != len(ids):
                raise TopicError(ErrorCode.invalid_replica_assignment, f"Duplicate brokers not allowed in replica assignment: {ids}")
            if not set(ids) <= live:
                raise TopicError(ErrorCode.invalid_replica_assignment, f"Unknown broker ids in assignment {ids}")
        partitions, rf = len(assignments), len(assignments[0])
    else:
        partitions = ctx.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        if partitions <= 0:
            raise TopicError(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
        rf = ctx.config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
        if rf <= 0:
            raise TopicError(ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0.")
        if rf > len(live):
            raise TopicError(ErrorCode.invalid_replication_factor,
                             f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only {len(live)} broker(s) are registered.")
    try:
        configs = validate_topic_configs({c.name: c.value for c in topic.configs})
    except InvalidConfig as exc:
        raise TopicError(ErrorCode.invalid_config, str(exc)) from None
    return partitions, rf, assignments, configs


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "CreatableTopicResult")
    config_cls = nested(cls, "CreatableTopicConfigs")
    counts = Counter(t.name for t in request.topics)
    duplicates = {name for name, n in counts.items() if n > 1}
    # Kafka answers duplicates on the broker and sends the rest to the controller, which counts them.
    counted = [t for t in request.topics if t.name not in duplicates]
    too_many_partitions = create_topics_total(counted, ctx.config.num_partitions) > MAX_PARTITIONS_PER_REQUEST
    checked: dict[str, Checked | TopicError] = {}
    may_create_any = ctx.authorizer.cluster_allowed(Operation.CREATE)  # ACLs: CREATE on the cluster, or on the topic
    for topic in request.topics:
        try:
            if not may_create_any and not ctx.authorizer.topic_allowed(Operation.CREATE, topic.name):
                raise TopicError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            checked.setdefault(topic.name, _check(ctx, topic, duplicates, too_many_partitions))
        except TopicError as exc:
            checked.setdefault(topic.name, exc)
    quota = MutationQuota(ctx.mutation_quotas, header, STRICT_QUOTA_SINCE)
    if not request.validate_only:
        for name, c in checked.items():
            if not isinstance(c, TopicError) and not quota.admit(c[0]):
                checked[name] = TopicError(*THROTTLED_MUTATION)
    valid = {name: c for name, c in checked.items() if not isinstance(c, TopicError)}
    created: dict[str, Topic | TopicError] = {}
    if not request.validate_only:  # all together: one trip of file work, one topics.json write
        wanted = [(name, partitions, rf, configs, assignments)
                  for name, (partitions, rf, assignments, configs) in valid.items()]
        created = await ctx.topic_admin.create_topics(wanted)
    results = []
    for topic in request.topics:
        outcome = checked[topic.name]
        made = created.get(topic.name)  # None: validate_only
        if not isinstance(outcome, TopicError) and isinstance(made, TopicError):
            outcome = made
        if isinstance(outcome, TopicError):
            results.append(make(result_cls, name=topic.name, topic_id=None, error_code=outcome.code,
                                error_message=str(outcome), topic_config_error_code=ErrorCode.none,
                                num_partitions=-1, replication_factor=-1, configs=None))
            continue
        partitions, rf, _assignments, configs = outcome
        topic_id = made.topic_id if isinstance(made, Topic) else None
        described = None if config_cls is None else tuple(
            make(config_cls, name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                 is_sensitive=e.sensitive)
            for e in topic_entries(ctx.config, *ctx.configs.broker_config_layers(), ctx.config.storage_mode, configs))
        results.append(make(result_cls, name=topic.name, topic_id=topic_id, error_code=ErrorCode.none,
                            error_message=None, topic_config_error_code=ErrorCode.none,
                            num_partitions=partitions, replication_factor=rf, configs=described))
    return make(cls, throttle_time=quota.throttle(), topics=tuple(results))
