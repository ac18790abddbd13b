"""DescribeConfigs v1-v4 for topics (resource type 2) and this broker (type 4, its entries from
the settings table: broker_config_entries.py)."""

from __future__ import annotations

from wire.config_codes import ConfigResourceType, ConfigSource, ConfigType
from wire.protocol import response_for

from broker.settings.broker_config_entries import broker_entries
from broker.settings.config import effective_topic_configs, log_config_for
from broker.security.acl.checks import config_refusal
from broker.security.acl.model import Operation
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DEFAULT_CONFIG
STRING, INT, LONG, DOUBLE, LIST = ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST
_LONGS = {"segment.ms", "retention.ms", "retention.bytes", "flush.messages", "delete.retention.ms",
          "min.compaction.lag.ms", "max.compaction.lag.ms"}
_DOUBLES = {"min.cleanable.dirty.ratio"}
_LISTS = {"cleanup.policy"}
_INTS = {"segment.bytes", "index.interval.bytes", "segment.index.bytes", "max.message.bytes", "min.insync.replicas"}


def _config_type(name: str) -> int:
    if name in _LONGS:
        return LONG
    if name in _INTS:
        return INT
    if name in _DOUBLES:
        return DOUBLE
    return LIST if name in _LISTS else STRING


def _topic_entries(broker, name):
    topic = broker.topics.get(name)
    if topic is None:
        return None
    cfg = log_config_for(broker.config.log_defaults, topic.configs)
    return [
        (key, value, DEFAULT_CONFIG if is_default else DYNAMIC_TOPIC_CONFIG, False, False, _config_type(key))
        for key, value, is_default in effective_topic_configs(cfg, topic.storage_mode, topic.configs)
    ]


def _broker_entries(broker):
    return [(e.name, e.value, e.source, True, e.sensitive, e.config_type) for e in broker_entries(broker.config)]


async def handle(broker, header, request):
    cls = response_for(header)
    result_cls = nested(cls, "DescribeConfigsResult")
    entry_cls = nested(cls, "DescribeConfigsResourceResult")
    results = []
    for res in request.resources:
        code, message, entries = "none", None, []
        refusal = config_refusal(broker, Operation.DESCRIBE_CONFIGS, res.resource_type, res.resource_name)
        if refusal is not None:  # ACLs, as Kafka's handleDescribeConfigsRequest
            code, message = refusal, "Authorization failed."
        elif res.resource_type == TOPIC:
            entries = _topic_entries(broker, res.resource_name)
            if entries is None:
                code, message, entries = "unknown_topic_or_partition", f"Topic {res.resource_name} does not exist", []
        elif res.resource_type == BROKER:
            if res.resource_name not in ("", str(broker.config.node_id)):
                code, message = "invalid_request", f"Unexpected broker id {res.resource_name}"
            else:
                entries = _broker_entries(broker)
        else:
            code, message = "invalid_request", f"Unsupported resource type {res.resource_type}"
        keys = res.configuration_keys
        if keys is not None:
            entries = [e for e in entries if e[0] in set(keys)]
        configs = tuple(
            make(entry_cls, name=name, value=value, read_only=read_only, config_source=source,
                 is_sensitive=sensitive, synonyms=(), config_type=config_type, documentation=None)
            for name, value, source, read_only, sensitive, config_type in entries
        )
        results.append(make(result_cls, error_code=error(code), error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name, configs=configs))
    return make(cls, throttle_time=NO_THROTTLE, results=tuple(results))
