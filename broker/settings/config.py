"""The settings the broker runs with, one frozen value built from the settings table.

Every field is filled by config_from_settings.py from the table (table.py), which holds each
setting's Kafka name, default and validator: nothing here has a default of its own. Tests and
embedded brokers build one with config_with(data_dir=..., ...), as `twinlog serve` would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from segment.log import LogConfig

from broker.security.acl.authorizer import AuthorizerSettings
from broker.settings.consumer_group_options import ConsumerGroupSettings
from broker.settings.delegation_token_options import DelegationTokenSettings
from broker.settings.share_group_options import ShareSettings
from broker.settings.streams_group_options import StreamsGroupSettings
from broker.settings.security_config import SecurityConfig


@dataclass(frozen=True)
class BrokerConfig:
    data_dir: Path  # log.dirs
    host: str  # host.name
    port: int
    advertised_host: str | None  # advertised.host.name
    node_id: int  # broker.id
    auto_create_topics: bool  # auto.create.topics.enable
    num_partitions: int  # num.partitions for auto-created topics
    storage_mode: str  # storage.mode: the layout of new topics
    max_request_size: int  # socket.request.max.bytes
    queued_max_request_bytes: int  # queued.max.request.bytes, over all connections
    connections_max_idle_ms: int  # connections.max.idle.ms (-1: never close)
    metrics_port: int | None  # metrics.port: Prometheus /metrics and /health (None: off; 0: any free port)
    console_sample_interval_ms: int  # console.sample.interval.ms: how often the console's charts sample
    event_loop_stall_threshold_ms: int  # event.loop.stall.threshold.ms: log what held a loop this late (0: off)
    retention_check_ms: int  # log.retention.check.interval.ms
    offsets_topic_partitions: int  # offsets.topic.num.partitions
    offsets_topic_segment_bytes: int  # offsets.topic.segment.bytes
    txn_topic_partitions: int  # transaction.state.log.num.partitions
    txn_topic_replication_factor: int  # capped by the live brokers, as Kafka does
    txn_topic_min_isr: int  # transaction.state.log.min.isr
    txn_topic_segment_bytes: int  # transaction.state.log.segment.bytes
    txn_max_timeout_ms: int  # transaction.max.timeout.ms
    txn_abort_timed_out_interval_ms: int  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    txn_partition_verification: bool  # transaction.partition.verification.enable
    txn_id_expiration_ms: int  # transactional.id.expiration.ms
    transaction_version: int  # transaction.version: the finalized feature level (KIP-890's transactions V2 at 2)
    add_partitions_retry_backoff_ms: int  # add.partitions.to.txn.retry.backoff.ms
    add_partitions_retry_backoff_max_ms: int  # add.partitions.to.txn.retry.backoff.max.ms
    txn_remove_expired_interval_ms: int  # transaction.remove.expired.transaction.cleanup.interval.ms
    group_initial_rebalance_delay_ms: int  # group.initial.rebalance.delay.ms
    group_min_session_timeout_ms: int  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int  # group.max.session.timeout.ms
    allow_internal_topic_changes: bool  # DeleteTopics / CreatePartitions on __consumer_offsets
    quota_window_num: int  # quota.window.num: samples of a client quota's rate
    quota_window_size_seconds: int  # quota.window.size.seconds: the length of one
    fetch_max_bytes: int  # fetch.max.bytes: the most one Fetch answers
    min_free_bytes: int  # Redpanda's storage_min_free_bytes: produce refused below it
    commitlog_file_bytes: int  # RocketMQ's mappedFileSizeCommitLog
    index_hash_slots: int  # RocketMQ's maxHashSlotNum (key index of commitlog topics)
    index_max_entries: int  # RocketMQ's maxIndexNum
    # per-partition files both layouts hold open at once (segments', consume queues'; None: half of RLIMIT_NOFILE)
    max_open_segment_files: int | None
    alter_log_dirs_max_bytes_per_s: int  # replica.alter.log.dirs.io.max.bytes.per.second
    etcd: str | None  # etcd.endpoint, e.g. http://127.0.0.1:2379: join that cluster (None: a cluster of one)
    default_replication_factor: int  # default.replication.factor
    min_insync_replicas: int  # min.insync.replicas (broker default of the topic config)
    replica_lag_time_max_ms: int  # replica.lag.time.max.ms
    replica_fetch_max_bytes: int  # replica.fetch.max.bytes: a follower's per-partition fetch size
    max_incremental_fetch_session_cache_slots: int  # the followers' fetch sessions kept (fetch_sessions.py)
    broker_session_timeout_ms: int  # broker.session.timeout.ms: the etcd lease TTL
    offsets_topic_replication_factor: int  # capped by the live brokers, as Kafka does
    unclean_leader_election: bool  # unclean.leader.election.enable
    log_cleaner_enable: bool  # log.cleaner.enable
    log_cleaner_threads: int  # log.cleaner.threads, each cleaning one partition at a time
    log_cleaner_backoff_ms: int  # log.cleaner.backoff.ms: sleep when no log is due
    log_cleaner_dedupe_buffer_size: int  # log.cleaner.dedupe.buffer.size, over all threads
    log_defaults: LogConfig  # the topic configs' defaults: the broker's log.* settings and the table's
    security: SecurityConfig  # listeners, SASL, TLS
    authorizer: AuthorizerSettings | None  # ACLs checked; None: no authorizer, as Kafka's default
    consumer_groups: ConsumerGroupSettings  # group.consumer.*: KIP-848 groups
    share_groups: ShareSettings  # group.share.*: KIP-932 share groups
    delegation_tokens: DelegationTokenSettings  # delegation.token.*: KIP-48
    streams_groups: StreamsGroupSettings  # group.streams.*: KIP-1071 streams groups
    # setting name -> (value, source) as resolved (sources.py): what DescribeConfigs reports for
    # settings that are not fields here, and whether each was set
    settings: dict[str, tuple[object, str]] = field(compare=False)

    @property
    def advertised(self) -> str:
        return self.advertised_host or self.host
