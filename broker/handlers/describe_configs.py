"""DescribeConfigs v1-v4 for topics, groups (their share.* configs, KIP-932) and this broker: the entries, with their types, sources and
synonyms, come from the settings table (broker/settings/described_configs.py); synonyms and
documentation only when the request asks for them, as Kafka answers."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.config_codes import ConfigResourceType
from typing import Any

from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.security.acl.model import Operation
from broker.settings.described_configs import (ConfigEntry, broker_entries, default_broker_entries, group_entries,
                                                topic_entries)


def _entries(ctx: ApiContext, res: Any) -> tuple[ErrorCode, str | None, list[ConfigEntry]]:
    """(error code name, message, entries) for one resource."""
    config, configs = ctx.config, ctx.configs
    refusal = ctx.authorizer.config_refusal(Operation.DESCRIBE_CONFIGS, res.resource_type, res.resource_name)
    if refusal is not None:  # ACLs, as Kafka's handleDescribeConfigsRequest
        return refusal, "Authorization failed.", []
    if res.resource_type == ConfigResourceType.TOPIC:
        topic = ctx.topics.get(res.resource_name)
        if topic is None:
            return ErrorCode.unknown_topic_or_partition, f"Topic {res.resource_name} does not exist", []
        layers = configs.broker_config_layers()
        return ErrorCode.none, None, topic_entries(config, *layers, topic.storage_mode, topic.configs)
    if res.resource_type == ConfigResourceType.GROUP:  # a group need not exist, as in Kafka
        if not res.resource_name:
            return ErrorCode.invalid_request, "Group name must not be empty", []
        return ErrorCode.none, None, group_entries(config, configs.group_configs(res.resource_name))
    if res.resource_type == ConfigResourceType.BROKER:
        if res.resource_name not in ("", str(config.node_id)):
            return ErrorCode.invalid_request, f"Unexpected broker id {res.resource_name}", []
        default = configs.broker_configs("")
        if not res.resource_name:
            return ErrorCode.none, None, default_broker_entries(config, default)
        return ErrorCode.none, None, broker_entries(config, configs.broker_configs(res.resource_name), default)
    return ErrorCode.invalid_request, f"Unsupported resource type {res.resource_type}", []


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "DescribeConfigsResult")
    entry_cls = nested(cls, "DescribeConfigsResourceResult")
    synonym_cls = nested(cls, "DescribeConfigsSynonym")
    with_synonyms = getattr(request, "include_synonyms", False)
    with_docs = getattr(request, "include_documentation", False)
    results = []
    for res in request.resources:
        code, message, entries = _entries(ctx, res)
        if res.configuration_keys is not None:
            wanted = set(res.configuration_keys)
            entries = [e for e in entries if e.name in wanted]
        configs = tuple(
            make(entry_cls, name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                 is_sensitive=e.sensitive, config_type=e.config_type, documentation=e.doc if with_docs else None,
                 synonyms=tuple(make(synonym_cls, name=s.name, value=s.value, source=s.source)
                                for s in e.synonyms) if with_synonyms else ())
            for e in entries
        )
        results.append(make(result_cls, error_code=code, error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name, configs=configs))
    return make(cls, throttle_time=NO_THROTTLE, results=tuple(results))
