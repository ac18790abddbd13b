"""DescribeConfigs v1-v4 for topics (resource type 2) and this broker (type 4)."""

from __future__ import annotations

from wire.protocol import response_for

from ..config import effective_topic_configs, log_config_for
from ..acl.checks import config_refusal
from ..acl.model import Operation
from .response_builder import NO_THROTTLE, error, make, nested

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
_LONGS = {"segment.ms", "retention.ms", "retention.bytes", "flush.messages", "delete.retention.ms",
          "min.compaction.lag.ms", "max.compaction.lag.ms", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size"}
_DOUBLES = {"min.cleanable.dirty.ratio"}
_LISTS = {"cleanup.policy", "listeners", "advertised.listeners"}
_INTS = {"segment.bytes", "index.interval.bytes", "segment.index.bytes", "max.message.bytes", "min.insync.replicas",
         "log.cleaner.threads"}


def _config_type(name: str) -> int:
    if name in _LONGS:
        return LONG
    if name in _INTS:
        return INT
    if name in _DOUBLES:
        return DOUBLE
    if name == "log.cleaner.enable":
        return BOOLEAN
    return LIST if name in _LISTS else STRING


def _topic_entries(broker, name):
    topic = broker.topics.get(name)
    if topic is None:
        return None
    cfg = log_config_for(broker.config.log_defaults, topic.configs)
    return [
        (key, value, DEFAULT_CONFIG if is_default else DYNAMIC_TOPIC_CONFIG, False)
        for key, value, is_default in effective_topic_configs(cfg, topic.storage_mode, topic.configs)
    ]


def _broker_entries(broker):
    c = broker.config
    d = c.log_defaults
    values = {
        "broker.id": c.node_id,
        "num.partitions": c.num_partitions,
        "auto.create.topics.enable": str(c.auto_create_topics).lower(),
        "log.segment.bytes": d.segment_bytes,
        "log.retention.ms": d.retention_ms,
        "log.retention.bytes": d.retention_bytes,
        "log.index.interval.bytes": d.index_interval_bytes,
        "log.flush.interval.messages": d.flush_messages or 9223372036854775807,
        "message.max.bytes": d.max_message_bytes,
        "socket.request.max.bytes": c.max_request_size,
        "fetch.max.bytes": c.fetch_max_bytes,
        "storage.mode": c.storage_mode,
        "listeners": f"PLAINTEXT://{c.host}:{c.port}",
        "advertised.listeners": f"PLAINTEXT://{c.advertised}:{c.port}",
        "offsets.topic.num.partitions": c.offsets_topic_partitions,
        "group.initial.rebalance.delay.ms": c.group_initial_rebalance_delay_ms,
        "group.min.session.timeout.ms": c.group_min_session_timeout_ms,
        "group.max.session.timeout.ms": c.group_max_session_timeout_ms,
        "default.replication.factor": c.default_replication_factor,
        "min.insync.replicas": c.min_insync_replicas,
        "replica.lag.time.max.ms": c.replica_lag_time_max_ms,
        "broker.session.timeout.ms": c.broker_session_timeout_ms,
        "offsets.topic.replication.factor": c.offsets_topic_replication_factor,
        "unclean.leader.election.enable": str(c.unclean_leader_election).lower(),
        "log.cleaner.enable": str(c.log_cleaner_enable).lower(),
        "log.cleaner.threads": c.log_cleaner_threads,
        "log.cleaner.backoff.ms": c.log_cleaner_backoff_ms,
        "log.cleaner.dedupe.buffer.size": c.log_cleaner_dedupe_buffer_size,
    }
    return [(k, str(v), STATIC_BROKER_CONFIG, True) for k, v in sorted(values.items())]


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
                 is_sensitive=False, synonyms=(), config_type=_config_type(name), documentation=None)
            for name, value, source, read_only in entries
        )
        results.append(make(result_cls, error_code=error(code), error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name, configs=configs))
    return make(cls, throttle_time=NO_THROTTLE, results=tuple(results))
