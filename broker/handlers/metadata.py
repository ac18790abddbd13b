"""Metadata: brokers, topics and partition leaders; auto-creates topics when allowed.

Who leads what comes from the cluster view (cluster_view.py): this broker alone, or the
image of etcd's metadata in a cluster, where a topic lists every partition whether hosted here
or not."""

from __future__ import annotations

import logging
import uuid

from wire.protocol import response_for

from broker.net import advertised_brokers
from broker.security.acl.checks import cluster_allowed, denied_names
from broker.security.acl.model import Operation, ResourceType
from broker.topic_names import TopicError, illegal_name
from broker.handlers.partition_limits import MAX_PARTITIONS_PER_REQUEST
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested

log = logging.getLogger(__name__)
UNKNOWN_OPERATIONS = -(2**31)


def _requested_names(broker, header, request) -> tuple[list[str] | None, list[uuid.UUID]]:
    """(names, ids no topic has). Names None means every topic: v0 asks for all with an empty
    list, v1+ with null. v10+ may name a topic by id alone (KIP-516): a KIP-848 consumer looks up
    the topics of its assignment, which names them by id, this way."""
    topics = request.topics
    if topics is None or (header.api_version == 0 and not topics):
        return None, []
    names, unknown = [], []
    for t in topics:
        if t.name is not None:
            names.append(t.name)
            continue
        topic_id = getattr(t, "topic_id", None)
        if topic_id is None or topic_id.int == 0:
            continue
        topic = broker.topics.get_by_id(topic_id)
        if topic is None:
            unknown.append(topic_id)
        else:
            names.append(topic.name)
    return names, unknown


def _auto_create_fits(broker, names: list[str] | None) -> bool:
    """Kafka's broker sends one CreateTopics for every missing topic of a Metadata request, and
    its controller refuses the lot past 10,000 partitions (partition_limits.py): so do we, before
    creating any, and the missing topics are answered as unknown."""
    missing = {n for n in names or () if broker.topics.get(n) is None and not illegal_name(n)}
    wanted = len(missing) * broker.config.num_partitions
    if wanted <= MAX_PARTITIONS_PER_REQUEST:
        return True
    log.warning("Metadata: not auto-creating %d topics (%d partitions, more than %d per request)",
                len(missing), wanted, MAX_PARTITIONS_PER_REQUEST)
    return False


def _refused(broker, names: list[str] | None, allow_create: bool) -> frozenset[str]:
    """ACLs, as Kafka's getTopicMetadata: the topics this principal may not DESCRIBE, and the
    missing ones it may not have auto-created (CREATE on the cluster or on the topic)."""
    if broker.acls is None:
        return frozenset()
    asked = names if names is not None else list(broker.topics.topics)
    refused = denied_names(broker, Operation.DESCRIBE, ResourceType.TOPIC, asked)
    if allow_create and names is not None and not cluster_allowed(broker, Operation.CREATE):
        missing = [n for n in names if n not in refused and broker.topics.get(n) is None]
        refused |= denied_names(broker, Operation.CREATE, ResourceType.TOPIC, missing)
    return refused


async def handle(broker, header, request):
    cls = response_for(header)
    topic_cls = nested(cls, "MetadataResponseTopic")
    part_cls = nested(cls, "MetadataResponsePartition")
    broker_cls = nested(cls, "MetadataResponseBroker")
    view = broker.view
    names, unknown_ids = _requested_names(broker, header, request)
    allow_create = (getattr(request, "allow_auto_topic_creation", True) and broker.config.auto_create_topics
                    and _auto_create_fits(broker, names))

    refused = _refused(broker, names, allow_create)
    created = {}
    if allow_create and names is not None:
        # Kafka's broker sends one CreateTopics for every missing topic: so one creation here.
        missing = list(dict.fromkeys(n for n in names if broker.topics.get(n) is None and n not in refused))
        if missing:
            created = await broker.auto_create(missing)
    topics = [make(topic_cls, error_code=error("unknown_topic_id"), name=None, topic_id=topic_id, is_internal=False,
                   partitions=()) for topic_id in unknown_ids]
    for name in names if names is not None else list(broker.topics.topics):
        if name in refused:
            if names is not None:  # asked by name: said to be refused; a list of all just leaves it out
                topics.append(make(topic_cls, error_code=error("topic_authorization_failed"), name=name,
                                   topic_id=None, is_internal=False, partitions=()))
            continue
        topic = broker.topics.get(name)
        code = "none"
        if isinstance(created.get(name), TopicError):
            code = created[name].code
        if topic is None:
            if code == "none":
                # Kafka (KafkaApis.getTopicMetadata): a name no topic can have is INVALID_TOPIC_EXCEPTION.
                code = "invalid_topic_exception" if illegal_name(name) else "unknown_topic_or_partition"
            topics.append(make(topic_cls, error_code=error(code), name=name, topic_id=None,
                               is_internal=False, partitions=()))
            continue
        partitions = []
        for index, local in enumerate(topic.partitions):
            placement = view.placement(topic.name, index, local)
            if placement is None:
                continue  # created in etcd, not yet in this broker's image
            # Kafka answers a partition without a leader with LEADER_NOT_AVAILABLE (clients retry).
            code = "none" if placement.leader >= 0 else "leader_not_available"
            partitions.append(make(
                part_cls, error_code=error(code), partition_index=index, leader_id=placement.leader,
                leader_epoch=placement.leader_epoch, replica_nodes=placement.replicas,
                isr_nodes=placement.isr, offline_replicas=placement.offline_replicas))
        partitions = tuple(partitions)
        topics.append(make(topic_cls, error_code=error("none"), name=topic.name, topic_id=topic.topic_id,
                           is_internal=topic.internal, partitions=partitions,
                           topic_authorized_operations=UNKNOWN_OPERATIONS))
    brokers = tuple(make(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=None)
                    for b in advertised_brokers.brokers(broker))
    return make(cls, throttle_time=NO_THROTTLE, brokers=brokers, cluster_id=broker.cluster_id,
                controller_id=view.controller_id, topics=tuple(topics), cluster_authorized_operations=UNKNOWN_OPERATIONS,
                error_code=error("none"))
