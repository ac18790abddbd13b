"""Metadata: brokers, topics and partition leaders; auto-creates topics when allowed. The answer
is written straight to bytes (wire/metadata_response.py): a Metadata of every topic names every
partition, and kio's entities cost 835 ms at 10,000 partitions.

Who leads what comes from the cluster view (cluster_view.py): this broker alone, or the
image of etcd's metadata in a cluster, where a topic lists every partition whether hosted here
or not."""

from __future__ import annotations

import logging
import uuid

from kio.schema.errors import ErrorCode

from wire.metadata_response import BrokerEntry, PartitionFields, TopicEntry, encode_metadata_response
from wire.protocol import EncodedBody, RequestHeader

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.net import advertised_brokers
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation, ResourceType
from broker.topic import Topic
from broker.topic_names import TopicError, illegal_name
from broker.handlers.partition_limits import MAX_PARTITIONS_PER_REQUEST

log = logging.getLogger(__name__)
UNKNOWN_OPERATIONS = -(2**31)
LEADER_NOT_AVAILABLE = ErrorCode.leader_not_available


def _requested_names(lookup: TopicLookup, header: RequestHeader, request: Request
                     ) -> tuple[list[str] | None, list[uuid.UUID]]:
    """(names, ids no topic has). Names None means every topic: v0 asks for all with an empty
    list, v1+ with null. v10+ may name a topic by id alone (KIP-516): a KIP-848 consumer looks up
    the topics of its assignment, which names them by id, this way."""
    topics = request.topics
    if topics is None or (header.api_version == 0 and not topics):
        return None, []
    names: list[str] = []
    unknown: list[uuid.UUID] = []
    for t in topics:
        if t.name is not None:
            names.append(t.name)
            continue
        topic_id = getattr(t, "topic_id", None)
        if topic_id is None or topic_id.int == 0:
            continue
        topic = lookup.get_by_id(topic_id)
        if topic is None:
            unknown.append(topic_id)
        else:
            names.append(topic.name)
    return names, unknown


def _auto_create_fits(lookup: TopicLookup, default_partitions: int, names: list[str] | None) -> bool:
    """Kafka's broker sends one CreateTopics for every missing topic of a Metadata request, and
    its controller refuses the lot past 10,000 partitions (partition_limits.py): so do we, before
    creating any, and the missing topics are answered as unknown."""
    missing = {n for n in names or () if lookup.get(n) is None and not illegal_name(n)}
    wanted = len(missing) * default_partitions
    if wanted <= MAX_PARTITIONS_PER_REQUEST:
        return True
    log.warning("Metadata: not auto-creating %d topics (%d partitions, more than %d per request)",
                len(missing), wanted, MAX_PARTITIONS_PER_REQUEST)
    return False


def _refused(authorizer: AccessChecks, lookup: TopicLookup, names: list[str] | None,
             allow_create: bool) -> frozenset[str]:
    """ACLs, as Kafka's getTopicMetadata: the topics this principal may not DESCRIBE, and the
    missing ones it may not have auto-created (CREATE on the cluster or on the topic)."""
    if not authorizer.enabled:
        return frozenset()
    asked = names if names is not None else list(lookup.topics)
    refused = authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, asked)
    if allow_create and names is not None and not authorizer.cluster_allowed(Operation.CREATE):
        missing = [n for n in names if n not in refused and lookup.get(n) is None]
        refused |= authorizer.denied_names(Operation.CREATE, ResourceType.TOPIC, missing)
    return refused


def _not_here_yet(created: Topic | TopicError | None) -> ErrorCode | None:
    """The code for a topic this request auto-created, or found created meanwhile, that this
    broker's metadata does not show yet (a cluster member applies etcd's news a moment later):
    LEADER_NOT_AVAILABLE, retriable, as Kafka's AutoTopicCreationManager answers a topic whose
    creation it sent. TOPIC_ALREADY_EXISTS is no Metadata answer: the Java consumer's
    partitionsFor takes it as fatal. Any other refusal is the creation's own; None: not created."""
    if created is None:
        return None
    if not isinstance(created, TopicError) or created.code is ErrorCode.topic_already_exists:
        return ErrorCode.leader_not_available
    return created.code


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    view, lookup = ctx.view, ctx.topics
    names, unknown_ids = _requested_names(lookup, header, request)
    allow_create: bool = (getattr(request, "allow_auto_topic_creation", True) and ctx.config.auto_create_topics
                          and _auto_create_fits(lookup, ctx.config.num_partitions, names))

    refused = _refused(ctx.authorizer, lookup, names, allow_create)
    created: dict[str, Topic | TopicError] = {}
    if allow_create and names is not None:
        # Kafka's broker sends one CreateTopics for every missing topic: so one creation here.
        missing = list(dict.fromkeys(n for n in names if lookup.get(n) is None and n not in refused))
        if missing:
            created = await ctx.topic_admin.auto_create(missing)
    errors: list[ErrorCode] = []  # every code but NONE, for the metrics

    def failed(code: ErrorCode, name: str | None, topic_id: uuid.UUID | None = None) -> TopicEntry:
        errors.append(code)
        return TopicEntry(code.value, name, topic_id, False, (), UNKNOWN_OPERATIONS)

    topics = [failed(ErrorCode.unknown_topic_id, None, topic_id) for topic_id in unknown_ids]
    for name in names if names is not None else list(lookup.topics):
        if name in refused:
            if names is not None:  # asked by name: said to be refused; a list of all just leaves it out
                topics.append(failed(ErrorCode.topic_authorization_failed, name))
            continue
        topic = lookup.get(name)
        if topic is None:
            code = _not_here_yet(created.get(name))
            # Kafka (KafkaApis.getTopicMetadata): a name no topic can have is INVALID_TOPIC_EXCEPTION.
            code = code or (ErrorCode.invalid_topic_exception if illegal_name(name) else ErrorCode.unknown_topic_or_partition)
            topics.append(failed(code, name))
            continue
        topics.append(TopicEntry(0, topic.name, topic.topic_id, topic.internal, _partitions(view, topic, errors),
                                 UNKNOWN_OPERATIONS))
    brokers = [BrokerEntry(b.node_id, b.host, b.port, None) for b in advertised_brokers.brokers(view)]
    body = encode_metadata_response(header.api_version, 0, brokers, ctx.view.cluster_id, view.controller_id, topics,
                                    UNKNOWN_OPERATIONS, 0)
    return EncodedBody(body, errors, 0 if header.api_version >= 3 else None)


def _partitions(view: ClusterView, topic: Topic, errors: list[ErrorCode]) -> list[PartitionFields]:
    """PartitionEntry's fields as plain tuples: a NamedTuple's constructor was half this loop."""
    partitions: list[PartitionFields] = []
    for index, local in enumerate(topic.partitions):
        placement = view.placement(topic.name, index, local)
        if placement is None:
            continue  # created in etcd, not yet in this broker's image
        code = 0
        if placement.leader < 0:  # Kafka answers a partition without a leader LEADER_NOT_AVAILABLE (clients retry)
            code = LEADER_NOT_AVAILABLE.value
            errors.append(LEADER_NOT_AVAILABLE)
        partitions.append((code, index, placement.leader, placement.leader_epoch, placement.replicas, placement.isr,
                           placement.offline_replicas))
    return partitions
