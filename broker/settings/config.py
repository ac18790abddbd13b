"""Broker settings and the topic configs we understand, with Kafka's names and defaults."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from segment.log import LogConfig

from broker.security.acl.authorizer import AuthorizerSettings
from broker.settings.security_config import SecurityConfig
from broker.storage.modes import MODES as STORAGE_MODES


@dataclass(frozen=True)
class BrokerConfig:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    node_id: int = 1
    auto_create_topics: bool = True  # auto.create.topics.enable
    num_partitions: int = 1  # num.partitions for auto-created topics
    storage_mode: str = "segment"
    max_request_size: int = 100 * 1024 * 1024  # socket.request.max.bytes
    # queued.max.request.bytes: bytes held for requests not yet handled, over all connections.
    # Kafka's -1 (unbounded) leans on the JVM's heap limit; a Python process has none, so the
    # default is 5 maximal requests: five 100 MiB producers proceed at once, and a peak is
    # bounded by this + one socket.request.max.bytes instead of by the host's memory.
    queued_max_request_bytes: int = 500 * 1024 * 1024
    connections_max_idle_ms: int = 600_000  # connections.max.idle.ms (-1: never close)
    metrics_port: int | None = None  # Prometheus /metrics and /health on this port (None: off; 0: any free port)
    retention_check_ms: int = 5 * 60 * 1000  # log.retention.check.interval.ms
    flush_interval_ms: int = -1  # log.flush.interval.ms: fsync every open log this often (-1: never)
    offsets_topic_partitions: int = 50  # offsets.topic.num.partitions
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024  # offsets.topic.segment.bytes
    group_initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    group_min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    allow_internal_topic_changes: bool = False  # DeleteTopics / CreatePartitions on __consumer_offsets
    fetch_max_bytes: int = 57_671_680  # fetch.max.bytes (Kafka's 55 MiB): the most one Fetch answers
    min_free_bytes: int = 64 * 1024 * 1024  # Redpanda's storage_min_free_bytes: produce refused below it
    commitlog_file_bytes: int = 1 << 30  # RocketMQ's mappedFileSizeCommitLog
    index_hash_slots: int = 5_000_000  # RocketMQ's maxHashSlotNum (key index of commitlog topics)
    index_max_entries: int = 20_000_000  # RocketMQ's maxIndexNum
    # per-partition files both layouts hold open at once (segments', consume queues'; None: half of RLIMIT_NOFILE)
    max_open_segment_files: int | None = None
    # Replication (issue 14). Without etcd the broker is a cluster of one, as before.
    etcd: str | None = None  # etcd endpoint, e.g. http://127.0.0.1:2379: join that cluster
    default_replication_factor: int = 1  # default.replication.factor
    min_insync_replicas: int = 1  # min.insync.replicas (broker default of the topic config)
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms
    broker_session_timeout_ms: int = 9_000  # broker.session.timeout.ms: the etcd lease TTL
    offsets_topic_replication_factor: int = 3  # capped by the live brokers, as Kafka does
    unclean_leader_election: bool = False  # unclean.leader.election.enable
    # Compaction (issue 15): background cleaner threads, each cleaning one partition at a time
    log_cleaner_enable: bool = True  # log.cleaner.enable
    log_cleaner_threads: int = 1  # log.cleaner.threads
    log_cleaner_backoff_ms: int = 15_000  # log.cleaner.backoff.ms: sleep when no log is due
    log_cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size, over all threads
    log_defaults: LogConfig = field(default_factory=LogConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)  # listeners, SASL (issue 17)
    authorizer: AuthorizerSettings | None = None  # ACLs checked (issue 17); None: no authorizer, as Kafka's default
    # setting name -> (value, source) as `twinlog serve` resolved them (config_sources.py): what
    # DescribeConfigs reports for settings that are not fields here, and whether each was set
    settings: dict[str, tuple[object, str]] = field(default_factory=dict, compare=False)

    @property
    def advertised(self) -> str:
        return self.advertised_host or self.host


class InvalidConfig(ValueError):
    """A topic config name or value Kafka would reject (INVALID_CONFIG)."""


def _positive(v: int) -> bool:
    return v > 0


def _retention(v: int) -> bool:
    return v >= -1


# Kafka config name -> (LogConfig field or None if only stored, parser, validator, doc)
TOPIC_CONFIGS: dict[str, tuple[str | None, type, object]] = {
    "segment.bytes": ("segment_bytes", int, lambda v: v >= 14),
    "segment.ms": ("segment_ms", int, _positive),
    "retention.ms": ("retention_ms", int, _retention),
    "retention.bytes": ("retention_bytes", int, _retention),
    "index.interval.bytes": ("index_interval_bytes", int, lambda v: v >= 0),
    "segment.index.bytes": ("segment_index_bytes", int, lambda v: v >= 8),
    "max.message.bytes": ("max_message_bytes", int, lambda v: v >= 0),
    "flush.messages": ("flush_messages", int, lambda v: v >= 0),
    "message.timestamp.type": ("message_timestamp_type", str, lambda v: v in ("CreateTime", "LogAppendTime")),
    "cleanup.policy": ("cleanup_policy", str, lambda v: bool(v) and set(v.split(",")) <= {"delete", "compact"}),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float, lambda v: 0 <= v <= 1),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", int, lambda v: v >= 0),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", int, _positive),
    "delete.retention.ms": ("delete_retention_ms", int, lambda v: v >= 0),
    "compression.type": (None, str, lambda v: v in ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")),
    "min.insync.replicas": (None, int, _positive),
    "storage.mode": (None, str, lambda v: v in STORAGE_MODES),
}

_STORED_DEFAULTS = {
    "compression.type": "producer",
    "min.insync.replicas": "1",
}


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """Parse and check configs given to CreateTopics; raises InvalidConfig."""
    clean: dict[str, str] = {}
    for name, value in configs.items():
        spec = TOPIC_CONFIGS.get(name)
        if spec is None:
            raise InvalidConfig(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidConfig(f"Null value not supported for topic config {name}")
        _field, parse, ok = spec
        try:
            parsed = parse(value)
        except ValueError:
            raise InvalidConfig(f"Invalid value {value} for configuration {name}") from None
        if not ok(parsed):
            raise InvalidConfig(f"Invalid value {value} for configuration {name}")
        clean[name] = value
    return clean


def log_config_for(defaults: LogConfig, configs: dict[str, str]) -> LogConfig:
    changes = {}
    for name, value in configs.items():
        field_name, parse, _ = TOPIC_CONFIGS[name]
        if field_name is not None:
            changes[field_name] = parse(value)
    return replace(defaults, **changes)


def effective_topic_configs(
    defaults: LogConfig, storage_mode: str, configs: dict[str, str]
) -> list[tuple[str, str, bool]]:
    """Every topic config as (name, value, is_default), for DescribeConfigs."""
    out = []
    for name, (field_name, _parse, _ok) in sorted(TOPIC_CONFIGS.items()):
        if name in configs:
            out.append((name, configs[name], False))
        elif field_name is not None:
            out.append((name, str(getattr(defaults, field_name)), True))
        elif name == "storage.mode":
            out.append((name, storage_mode, True))
        else:
            out.append((name, _STORED_DEFAULTS[name], True))
    return out
