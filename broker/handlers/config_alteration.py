"""What AlterConfigs and IncrementalAlterConfigs share: the request's resources are each checked
(ACLs, duplicates), then (unless validate_only) applied; the answer is a Kafka error code and
message per resource. The two handlers differ only in how a resource's configs become its new
overrides (topic_config_changes.py: replace_all / incremental).

Topics: the new overrides come from topic_config_changes.py; a single broker writes them to
topics.json and the live partition logs take them at once (TopicRegistry.alter_configs).
A cluster member changes the topic's record in etcd by compare-and-swap, the operations
applied to etcd's overrides (ClusterMember.alter_topic_configs); every broker's partitions
take them when its metadata image shows them, the answering broker's before it answers.

Groups: the new overrides come from broker/settings/group_configs.py (checked against the
broker's bounds) and are kept by broker/groups/group_config_store.py (group_configs.json, or
etcd by compare-and-swap on a cluster) before the answer; a group need not exist.

Brokers (this broker's id, or the cluster default with an empty name): the configs Kafka takes
at runtime, checked by its rules (broker/settings/dynamic_broker_configs.py), kept by
broker/settings/dynamic_broker_store.py (broker_configs.json, or etcd by compare-and-swap on a
cluster) before the answer; the topic defaults among them take effect on this broker's
partitions before the answer too (RuntimeConfigs.alter_broker_configs), on the other members'
when their metadata images show them. Other resource types are INVALID_REQUEST.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Callable, Iterable, Mapping

from wire.error_codes import ErrorCode
from wire.config_codes import ConfigResourceType
from wire.protocol import RequestHeader, response_for

from broker.api.config_service import ConfigService
from broker.api.context import Answer, ApiContext, Request
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.security.acl.model import Operation
from broker.settings.config import BrokerConfig
from broker.settings.described_configs import topic_entries
from broker.settings.topic_config_changes import ConfigChangeError
from broker.topic_names import TopicError

log = logging.getLogger(__name__)

TOPIC, BROKER, GROUP = ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.GROUP

# (current overrides, defaults, the topic's storage mode) -> new overrides; raises ConfigChangeError.
# A group's and a broker's take ({}, "") for the last two.
ConfigChange = Callable[[dict[str, str], Mapping[str, str | None], str], dict[str, str]]
# (the broker's static config, a request's resource: kio's) -> its ConfigChange
ResourceChange = Callable[[BrokerConfig, Any], ConfigChange]


async def answer(ctx: ApiContext, header: RequestHeader, request: Request, change_of: ResourceChange) -> Answer:
    """The response to an AlterConfigs or IncrementalAlterConfigs request (same response shape)."""
    cls = response_for(header)
    result_cls = nested(cls, "AlterConfigsResourceResponse")
    repeated = _duplicated(request.resources)
    results = []
    for res in request.resources:
        refusal = ctx.authorizer.config_refusal(Operation.ALTER_CONFIGS, res.resource_type, res.resource_name)
        code: ErrorCode
        message: str | None
        if refusal is not None:  # ACLs, as Kafka's AlterConfigs handlers
            code, message = refusal, "Authorization failed."
        else:
            code, message = await _alter(ctx, res.resource_type, res.resource_name, change_of(ctx.config, res),
                                         request.validate_only, (res.resource_type, res.resource_name) in repeated)
        results.append(make(result_cls, error_code=code, error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name))
    return make(cls, throttle_time=NO_THROTTLE, responses=tuple(results))


def _duplicated(resources: Iterable[Any]) -> set[tuple[int, str]]:
    """(type, name) of resources a request names more than once: Kafka answers each
    INVALID_REQUEST and changes none of them."""
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    return {key for key, n in counts.items() if n > 1}


async def _alter(ctx: ApiContext, resource_type: int, name: str, change: ConfigChange,
                validate_only: bool, duplicate: bool) -> tuple[ErrorCode, str | None]:
    if duplicate:
        return ErrorCode.invalid_request, f"Duplicate resource in the request: {name}"
    try:
        if resource_type == TOPIC:
            await _alter_topic(ctx.topics, ctx.view, ctx.configs, ctx.config, name, change, validate_only)
        elif resource_type == GROUP:
            if not name:
                raise ConfigChangeError(ErrorCode.invalid_request, "Group name must not be empty")
            await ctx.configs.alter_group_configs(name, lambda current: change(current, {}, ""), validate_only)
        elif resource_type == BROKER:
            _check_broker_id(ctx.config.node_id, name)
            await ctx.configs.alter_broker_configs(name, lambda current: change(current, {}, ""), validate_only)
        else:
            raise ConfigChangeError(ErrorCode.invalid_request, f"Unsupported resource type {resource_type}")
    except (ConfigChangeError, TopicError) as exc:
        return exc.code, str(exc)
    return ErrorCode.none, None


async def _alter_topic(topics: TopicLookup, view: ClusterView, configs: ConfigService, config: BrokerConfig,
                       name: str, change: ConfigChange, validate_only: bool) -> None:
    topic = topics.topics.get(name)  # not .get(): a key-lookup view has no configs to change
    if topic is None:
        raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist")
    entries = topic_entries(config, *configs.broker_config_layers(), topic.storage_mode, {})
    defaults = {e.name: e.value for e in entries}
    # a cluster changes etcd's overrides, not this broker's copy
    await view.alter_topic_configs(name, lambda current, mode: change(current, defaults, mode), validate_only)


def _check_broker_id(node_id: int, name: str) -> None:
    """Kafka's validateResourceNameIsCurrentNodeId: empty (the cluster default) or this broker."""
    if not name:
        return
    try:
        number = int(name)
    except ValueError:
        raise ConfigChangeError(ErrorCode.invalid_request, f"Node id must be an integer, but it is: {name}") from None
    if number != node_id:
        raise ConfigChangeError(ErrorCode.invalid_request,
                                f"Unexpected broker id, expected {node_id}, but received {name}")
