"""Every setting, declared once: the broker's settings and the topic configs, one row each (a
Setting: setting.py says what its fields and scopes mean).

From this table come `twinlog serve`'s options (serve_options.py), the `--config FILE`
(server.properties) keys and the TWINLOG_* environment variables (sources.py), BrokerConfig
and the LogConfig the engines get (config_from_settings.py), the topic configs CreateTopics,
AlterConfigs and IncrementalAlterConfigs accept (topic_configs.py), DescribeConfigs' entries
with their types, sources and synonyms (described_configs.py), and docs/configuration.md
(config_docs.py). No other module holds a setting's default.
"""

from __future__ import annotations

from pathlib import Path

from wire.config_codes import ConfigType
from wire.sasl_mechanism import MECHANISMS

from broker.net.listeners import DEFAULT_PROTOCOL_MAP
from broker.security.tls_config import CLIENT_AUTH
from broker.settings.kinds import (LONG_MAX, Bool, Choice, ChoiceList, Double, FilePath, Int, Items, Text,
                                    ThrottledReplicas)
from broker.settings.setting import TOPIC, Setting
from broker.settings.share_offset_reset import ShareOffsetReset
from broker.storage.modes import MODES

_MIB, _MINUTE, _DAY = 1024 * 1024, 60_000, 24 * 3600 * 1000


_PEM = FilePath(must_exist=True)
_LEVEL = ("The level the broker compresses at when compression.type makes it rewrite a producer's batch "
          "in this codec; a batch kept as the producer compressed it keeps the producer's level.")
_NO_THROTTLE = ("Kept and shown only: the broker has no replication quotas (leader/follower."
                "replication.throttled.rate), so the replicas listed are not throttled.")
_NO_TIERING = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
_LOCAL_RETENTION = ("Kept and shown only: without tiered storage the local log is the whole log, which "
                    "retention.ms and retention.bytes govern; -2: those.")
_NO_REMOTE = "Kept and shown only: without tiered storage nothing is copied to or deleted from remote storage."


def _s(name, flag, kind, default, doc, target, **more) -> Setting:
    return Setting(name, flag, kind, default, doc, target, **more)


def _topic(name, kind, default, doc, target) -> Setting:
    return Setting(name, None, kind, default, doc, target, topic=name, describe=False)


SETTINGS: tuple[Setting, ...] = (
    _s("log.dirs", "data-dir", FilePath(False), Path("data"), "Directory of the broker's data (one directory).",
       "broker:data_dir", aliases=("log.dir",)),
    _s("host.name", "host", Text("HOST"), "127.0.0.1", "Address to listen on.", "broker:host"),
    _s("port", "port", Int(0, 65535), 9092,
       "Port to listen on; 0: any free port (the log line says which, and Metadata advertises it).", "broker:port"),
    _s("advertised.host.name", "advertised-host", Text("HOST"), None,
       "Host name given to clients [default: --host].", "broker:advertised_host"),
    _s("broker.id", "node-id", Int(0), 1, "This broker's id; each cluster member needs its own.",
       "broker:node_id", aliases=("node.id",)),
    _s("storage.mode", "storage-mode", Choice(MODES), "segment",
       "Storage layout of new topics, and in a cluster of the new replicas this broker holds (a topic's "
       "explicit storage.mode config overrides it on every broker; a replica keeps the layout it was "
       "created or moved in).", "broker:storage_mode", topic="storage.mode"),
    _s("num.partitions", "num-partitions", Int(1), 1, "Partitions of auto-created topics.",
       "broker:num_partitions"),
    _s("auto.create.topics.enable", "auto-create-topics", Bool(), True,
       "Create a topic when Metadata or Produce names one that does not exist.", "broker:auto_create_topics",
       negatable=True),
    _s("log.segment.bytes", "segment-bytes", Int(14), 1 << 30,
       "Size at which a segment rolls.", "log:segment_bytes", topic="segment.bytes"),
    _s("log.retention.ms", "retention-ms", Int(-1, long=True), 7 * _DAY,
       "How long records are kept; -1: forever.", "log:retention_ms", topic="retention.ms"),
    _s("log.retention.bytes", "retention-bytes", Int(-1, long=True), -1,
       "Bytes a partition keeps before its oldest segments go; -1: no limit.", "log:retention_bytes",
       topic="retention.bytes"),
    _s("log.retention.check.interval.ms", "retention-check-ms", Int(1, long=True), 5 * _MINUTE,
       "How often retention is applied.", "broker:retention_check_ms"),
    _s("log.flush.interval.messages", "flush-messages", Int(0, long=True, never=0), 0,
       "fsync every N messages; 1: before acknowledging (group commit); 0: leave it to the page "
       "cache (DescribeConfigs says 9223372036854775807, Kafka's never).", "log:flush_messages",
       topic="flush.messages"),
    _s("log.flush.interval.ms", "flush-interval-ms", Int(-1, long=True, never=-1), -1,
       "fsync a partition's data once it is this old; -1: leave it to the page cache (DescribeConfigs "
       "says 9223372036854775807, Kafka's never). The commitlog layout's partitions share one file: "
       "it is fsynced when any of its partitions is due.", "log:flush_ms", topic="flush.ms"),
    _s("log.segment.delete.delay.ms", "file-delete-delay-ms", Int(0, long=True), 60_000,
       "How long a deleted partition's files stay (renamed) before they are removed, and in the "
       "commitlog layout how long a deleted commitlog file stays open for fetches still sending "
       "from it (those files are shared, so the broker's value governs them). The segment "
       "layout's segments need no delay: a fetch holds its file open.", "log:file_delete_delay_ms",
       topic="file.delete.delay.ms"),
    _s("log.index.interval.bytes", "log-index-interval-bytes", Int(0), 4096,
       "Bytes between offset-index entries.", "log:index_interval_bytes", topic="index.interval.bytes"),
    _s("message.max.bytes", "message-max-bytes", Int(0), _MIB + 12,
       "Largest record batch a topic accepts.", "log:max_message_bytes", topic="max.message.bytes"),
    # Topic configs with no broker setting here: a topic that does not set one has this default
    _topic("segment.ms", Int(1, long=True), 7 * _DAY, "Age at which a segment rolls even if not full.",
           "log:segment_ms"),
    _topic("segment.jitter.ms", Int(0, long=True), 0,
           "A segment rolls up to this much (drawn per segment) before segment.ms, so partitions do "
           "not all roll at once. The commitlog layout's files roll by size alone "
           "(commitlog.file.bytes): there it shapes only what the cleaner compacts together.",
           "log:segment_jitter_ms"),
    _topic("segment.index.bytes", Int(8), 10 * _MIB,
           "Kept and shown only: the offset index here grows with its segment, one entry per "
           "index.interval.bytes, rather than being preallocated.", None),
    _topic("message.timestamp.type", Choice(("CreateTime", "LogAppendTime")), "CreateTime",
           "The timestamp records keep: the producer's (CreateTime) or the broker's when it appends "
           "them (LogAppendTime).", "log:message_timestamp_type"),
    _topic("message.timestamp.before.max.ms", Int(0, long=True), LONG_MAX,
           "How far before the broker's clock a CreateTime record's timestamp may be; a batch with "
           "one older is refused (INVALID_TIMESTAMP, naming each such record).",
           "log:message_timestamp_before_max_ms"),
    _topic("message.timestamp.after.max.ms", Int(0, long=True), LONG_MAX,
           "How far after the broker's clock a CreateTime record's timestamp may be; a batch with "
           "one later is refused (INVALID_TIMESTAMP, naming each such record).",
           "log:message_timestamp_after_max_ms"),
    _topic("cleanup.policy", ChoiceList(("delete", "compact")), "delete",
           "delete: segments go by retention.ms and retention.bytes; compact: the cleaner keeps the "
           "latest record of each key; both: compact,delete.", "log:cleanup_policy"),
    _topic("min.cleanable.dirty.ratio", Double(0, 1), 0.5,
           "A compacted log is cleaned once its dirty (not yet cleaned) bytes are this share of it.",
           "log:min_cleanable_dirty_ratio"),
    _topic("min.compaction.lag.ms", Int(0, long=True), 0, "A record stays uncompacted at least this long.",
           "log:min_compaction_lag_ms"),
    _topic("max.compaction.lag.ms", Int(1, long=True), LONG_MAX,
           "A log whose oldest dirty record is this old is cleaned whatever its dirty ratio.",
           "log:max_compaction_lag_ms"),
    _topic("delete.retention.ms", Int(0, long=True), _DAY, "How long tombstones stay in a compacted log.",
           "log:delete_retention_ms"),
    _topic("compression.type", Choice(("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")), "producer",
           "producer: batches are stored as the producer compressed them. A codec (or uncompressed): the "
           "leader rewrites a producer's batch in another codec in this one before appending it, as Kafka's "
           "LogValidator; a batch already in it is stored untouched.", "log:compression_type"),
    _topic("compression.gzip.level", Int(-1, 9), -1, _LEVEL, "log:compression_gzip_level"),
    _topic("compression.lz4.level", Int(1, 17), 9, _LEVEL, "log:compression_lz4_level"),
    _topic("compression.zstd.level", Int(-131072, 22), 3, _LEVEL, "log:compression_zstd_level"),
    _topic("preallocate", Bool(), False,
           "Kept and shown only: Kafka preallocates a segment to keep its file contiguous on "
           "filesystems that fragment (its reason is Windows); here a segment and the commitlog "
           "grow as written, so recovery never meets a preallocated, zero-filled tail.", None),
    _topic("leader.replication.throttled.replicas", ThrottledReplicas(), "", _NO_THROTTLE, None),
    _topic("follower.replication.throttled.replicas", ThrottledReplicas(), "", _NO_THROTTLE, None),
    # Tiered storage: this broker has none (Kafka's remote.log.storage.system.enable=false), so
    # the local log is the whole log and retention.* govern it, as Kafka ignores these then.
    _topic("remote.storage.enable", Bool(refuse_true=_NO_TIERING), False,
           "Always false: the broker has no tiered storage, and true is refused as Kafka refuses it "
           "then.", None),
    _topic("local.retention.ms", Int(-2, long=True), -2, _LOCAL_RETENTION, None),
    _topic("local.retention.bytes", Int(-2, long=True), -2, _LOCAL_RETENTION, None),
    _topic("remote.log.copy.disable", Bool(), False, _NO_REMOTE, None),
    _topic("remote.log.delete.on.disable", Bool(), False, _NO_REMOTE, None),
    _s("socket.request.max.bytes", "socket-request-max-bytes", Int(1), 100 * _MIB,
       "Largest request the broker reads; a bigger one closes the connection.", "broker:max_request_size"),
    # Kafka's -1 (unbounded) leans on the JVM's heap limit; a Python process has none, so the
    # default is 5 maximal requests: five 100 MiB producers proceed at once, and a peak is
    # bounded by this + one socket.request.max.bytes instead of by the host's memory.
    _s("queued.max.request.bytes", "queued-max-request-bytes", Int(-1, long=True), 500 * _MIB,
       "Bytes of requests read but not yet handled, over all connections, before the broker stops "
       "reading more; 0 or -1: no bound.", "broker:queued_max_request_bytes"),
    _s("connections.max.idle.ms", "connections-max-idle-ms", Int(-1, long=True), 600_000,
       "Close a connection that has neither read nor written for this long; -1: never.",
       "broker:connections_max_idle_ms"),
    _s("quota.window.num", "quota-window-num", Int(1), 11,
       "Samples a client quota's rate is measured over (Kafka's quota.window.num).",
       "broker:quota_window_num"),
    _s("quota.window.size.seconds", "quota-window-size-seconds", Int(1), 1,
       "Seconds of one such sample (Kafka's quota.window.size.seconds).", "broker:quota_window_size_seconds"),
    _s("fetch.max.bytes", "fetch-max-bytes", Int(0), 55 * _MIB,
       "The most one Fetch response holds, whatever the client asks; the first batch still goes "
       "whole, so a consumer always progresses.", "broker:fetch_max_bytes"),
    _s("offsets.topic.num.partitions", "offsets-topic-partitions", Int(1), 50,
       "Partitions of __consumer_offsets when it is first created.", "broker:offsets_topic_partitions"),
    _s("offsets.topic.segment.bytes", "offsets-topic-segment-bytes", Int(1), 100 * _MIB,
       "segment.bytes of __consumer_offsets when it is first created: the cleaner compacts closed "
       "segments only.", "broker:offsets_topic_segment_bytes"),
    _s("offsets.topic.replication.factor", "offsets-topic-replication-factor", Int(1),
       3,
       "Replication factor of __consumer_offsets (capped by the live brokers when created).",
       "broker:offsets_topic_replication_factor"),
    _s("transaction.state.log.num.partitions", "transaction-state-log-partitions", Int(1), 50,
       "Partitions of __transaction_state when it is first created.", "broker:txn_topic_partitions"),
    _s("transaction.state.log.replication.factor", "transaction-state-log-replication-factor", Int(1), 3,
       "Replication factor of __transaction_state (capped by the live brokers when created).",
       "broker:txn_topic_replication_factor"),
    _s("transaction.state.log.min.isr", "transaction-state-log-min-isr", Int(1), 2,
       "min.insync.replicas of __transaction_state (capped by its replication factor when created, so "
       "one broker can serve transactions).", "broker:txn_topic_min_isr"),
    _s("transaction.state.log.segment.bytes", "transaction-state-log-segment-bytes", Int(1), 100 * _MIB,
       "segment.bytes of __transaction_state when it is first created.", "broker:txn_topic_segment_bytes"),
    _s("transaction.max.timeout.ms", "transaction-max-timeout-ms", Int(1), 900_000,
       "Longest transaction.timeout.ms a producer may ask for (InitProducerId answers "
       "INVALID_TRANSACTION_TIMEOUT above it).", "broker:txn_max_timeout_ms"),
    _s("transaction.abort.timed.out.transaction.cleanup.interval.ms",
       "transaction-abort-timed-out-transaction-cleanup-interval-ms", Int(1), 10_000,
       "How often the coordinator aborts transactions open longer than their timeout.",
       "broker:txn_abort_timed_out_interval_ms"),
    _s("transaction.partition.verification.enable", "transaction-partition-verification-enable", Bool(), True,
       "A partition's leader asks the transaction coordinator whether a transaction's first batch in it "
       "belongs to the producer's open transaction before appending it (KIP-890 part 1; clients of "
       "Produce v12+, transactions V2, have the partition added whatever this says). Off: such a batch of "
       "an older client is appended unasked, and a late one may hold the last stable offset until the "
       "transaction times out.", "broker:txn_partition_verification", negatable=True),
    _s("transaction.version", "transaction-version", Int(0, 2), 2,
       "The level Kafka's transaction.version feature starts finalized at, until an UpdateFeatures "
       "finalizes another (kept in features.json, or etcd on a cluster, which then wins over this setting); "
       "ApiVersions advertises it: at 2 "
       "clients of transactions V2 (the Java client 4.x) end every transaction with an epoch bump and let "
       "partition leaders and the group coordinator add partitions to it (KIP-890); at 0 or 1 they use "
       "AddPartitionsToTxn and AddOffsetsToTxn as before. Requests are served by their version whatever "
       "the level. 2 is what a new Kafka 4.x cluster finalizes.", "broker:transaction_version"),
    _s("add.partitions.to.txn.retry.backoff.ms", "add-partitions-to-txn-retry-backoff-ms", Int(1), 20,
       "How long a partition leader (or the group coordinator) waits before asking the transaction "
       "coordinator again to add a transactions V2 producer's partition it answered "
       "CONCURRENT_TRANSACTIONS (the producer's last transaction still ending).",
       "broker:add_partitions_retry_backoff_ms"),
    _s("add.partitions.to.txn.retry.backoff.max.ms", "add-partitions-to-txn-retry-backoff-max-ms", Int(0), 100,
       "How long those asks go on before CONCURRENT_TRANSACTIONS is answered to the producer, which "
       "retries.", "broker:add_partitions_retry_backoff_max_ms"),
    _s("transactional.id.expiration.ms", "transactional-id-expiration-ms", Int(1), 7 * _DAY,
       "A transactional id with no transaction open and no request for this long is forgotten.",
       "broker:txn_id_expiration_ms"),
    _s("transaction.remove.expired.transaction.cleanup.interval.ms",
       "transaction-remove-expired-transaction-cleanup-interval-ms", Int(1), 3_600_000,
       "How often the coordinator forgets expired transactional ids.", "broker:txn_remove_expired_interval_ms"),
    _s("group.initial.rebalance.delay.ms", "group-initial-rebalance-delay-ms", Int(0),
       3000,
       "How long a new group waits for more members before its first assignment.",
       "broker:group_initial_rebalance_delay_ms"),
    _s("group.min.session.timeout.ms", "group-min-session-timeout-ms", Int(0), 6_000,
       "Shortest session timeout a member may ask for.", "broker:group_min_session_timeout_ms"),
    _s("group.max.session.timeout.ms", "group-max-session-timeout-ms", Int(0), 1_800_000,
       "Longest session timeout a member may ask for.", "broker:group_max_session_timeout_ms"),
    # KIP-848 consumer groups: consumer_group_options.py checks each value against its min/max
    _s("group.consumer.heartbeat.interval.ms", "group-consumer-heartbeat-interval-ms", Int(1), 5_000,
       "How often members of consumer-protocol groups heartbeat (the interval every heartbeat "
       "answers).", "consumer_group:heartbeat_interval_ms"),
    _s("group.consumer.min.heartbeat.interval.ms", "group-consumer-min-heartbeat-interval-ms", Int(1), 5_000,
       "Smallest group.consumer.heartbeat.interval.ms allowed.", "consumer_group:min_heartbeat_interval_ms"),
    _s("group.consumer.max.heartbeat.interval.ms", "group-consumer-max-heartbeat-interval-ms", Int(1), 15_000,
       "Largest group.consumer.heartbeat.interval.ms allowed.", "consumer_group:max_heartbeat_interval_ms"),
    _s("group.consumer.session.timeout.ms", "group-consumer-session-timeout-ms", Int(1), 45_000,
       "A consumer-protocol member that does not heartbeat for this long is removed and its "
       "partitions reassigned.", "consumer_group:session_timeout_ms"),
    _s("group.consumer.min.session.timeout.ms", "group-consumer-min-session-timeout-ms", Int(1), 45_000,
       "Smallest group.consumer.session.timeout.ms allowed.", "consumer_group:min_session_timeout_ms"),
    _s("group.consumer.max.session.timeout.ms", "group-consumer-max-session-timeout-ms", Int(1), 60_000,
       "Largest group.consumer.session.timeout.ms allowed.", "consumer_group:max_session_timeout_ms"),
    _s("group.consumer.assignors", "group-consumer-assignors", ChoiceList(("uniform", "range")), "uniform,range",
       "Server-side assignors of consumer-protocol groups; a member picks one with "
       "group.remote.assignor, the first is the default.", "consumer_group:assignors"),
    _s("group.consumer.migration.policy", "group-consumer-migration-policy",
       Choice(("bidirectional", "upgrade", "downgrade", "disabled")), "bidirectional",
       "Whether a classic group becomes a consumer group when a member of the new protocol joins "
       "(upgrade), and back when the last one leaves (downgrade).", "consumer_group:migration_policy"),
    # KIP-1071 streams groups: streams_group_options.py gathers them
    _s("group.streams.heartbeat.interval.ms", "group-streams-heartbeat-interval-ms", Int(1), 5_000,
       "How often members of streams groups heartbeat.", "streams_group:heartbeat_interval_ms"),
    _s("group.streams.session.timeout.ms", "group-streams-session-timeout-ms", Int(1), 45_000,
       "A streams-group member that does not heartbeat for this long is removed and its tasks "
       "reassigned.", "streams_group:session_timeout_ms"),
    _s("group.streams.num.standby.replicas", "group-streams-num-standby-replicas", Int(0), 0,
       "Standby tasks per stateful task of a streams group, each on another process than the "
       "task's active one.", "streams_group:num_standby_replicas"),
    _s("group.streams.max.standby.replicas", "group-streams-max-standby-replicas", Int(0), 2,
       "Largest group.streams.num.standby.replicas allowed.", "streams_group:max_standby_replicas"),
    # KIP-932 share groups: share_group_options.py gathers them
    _s("group.share.record.lock.duration.ms", "group-share-record-lock-duration-ms", Int(1), 30_000,
       "How long a share-group member holds the records it acquired: unacknowledged by then, they "
       "are handed to another member.", "share_group:lock_ms", group="share.record.lock.duration.ms"),
    _s("group.share.min.record.lock.duration.ms", "group-share-min-record-lock-duration-ms", Int(1000), 15_000,
       "Smallest share.record.lock.duration.ms a group may set.", "share_group:min_lock_ms"),
    _s("group.share.max.record.lock.duration.ms", "group-share-max-record-lock-duration-ms", Int(1000), 60_000,
       "Largest share.record.lock.duration.ms a group may set.", "share_group:max_lock_ms"),
    _s("group.share.delivery.count.limit", "group-share-delivery-count-limit", Int(2, 10), 5,
       "How many times a record is delivered to share-group members before it is archived, never "
       "delivered again.", "share_group:delivery_limit", group="share.delivery.count.limit"),
    _s("group.share.min.delivery.count.limit", "group-share-min-delivery-count-limit", Int(2, 10), 2,
       "Smallest share.delivery.count.limit a group may set.", "share_group:min_delivery_limit"),
    _s("group.share.max.delivery.count.limit", "group-share-max-delivery-count-limit", Int(2, 10), 10,
       "Largest share.delivery.count.limit a group may set.", "share_group:max_delivery_limit"),
    _s("group.share.partition.max.record.locks", "group-share-partition-max-record-locks", Int(100, 10_000), 2_000,
       "Most records of one share-partition in flight (between its start offset and the furthest "
       "delivered) at once.", "share_group:max_in_flight", group="share.partition.max.record.locks"),
    _s("group.share.session.timeout.ms", "group-share-session-timeout-ms", Int(1), 45_000,
       "A share-group member that does not heartbeat for this long is removed and its acquired "
       "records released.", "share_group:session_timeout_ms", group="share.session.timeout.ms"),
    _s("group.share.min.session.timeout.ms", "group-share-min-session-timeout-ms", Int(1), 45_000,
       "Smallest share.session.timeout.ms a group may set.", "share_group:min_session_timeout_ms"),
    _s("group.share.max.session.timeout.ms", "group-share-max-session-timeout-ms", Int(1), 60_000,
       "Largest share.session.timeout.ms a group may set.", "share_group:max_session_timeout_ms"),
    _s("group.share.heartbeat.interval.ms", "group-share-heartbeat-interval-ms", Int(1), 5_000,
       "How often share-group members heartbeat.", "share_group:heartbeat_interval_ms",
       group="share.heartbeat.interval.ms"),
    _s("group.share.min.heartbeat.interval.ms", "group-share-min-heartbeat-interval-ms", Int(1), 5_000,
       "Smallest share.heartbeat.interval.ms a group may set.", "share_group:min_heartbeat_interval_ms"),
    _s("group.share.max.heartbeat.interval.ms", "group-share-max-heartbeat-interval-ms", Int(1), 15_000,
       "Largest share.heartbeat.interval.ms a group may set.", "share_group:max_heartbeat_interval_ms"),
    _s("share.auto.offset.reset", "share-auto-offset-reset", ShareOffsetReset(), "latest",
       "Where a share group starts in a partition it has never consumed: latest, earliest, or "
       "by_duration:<ISO-8601 duration> (the first record at or after now less it). Kafka has it as a "
       "group config only; here the broker's value is the default of the group config of that name.",
       "share_group:auto_offset_reset", group="share.auto.offset.reset"),
    _s("share.isolation.level", "share-isolation-level", Choice(("read_uncommitted", "read_committed")),
       "read_uncommitted",
       "Which transactional records share groups deliver: read_committed ones only up to the last "
       "stable offset and never an aborted transaction's. Kafka has it as a group config only; "
       "here the broker's value is the default of the group config of that name.",
       "share_group:isolation_level", group="share.isolation.level"),
    _s("share.renew.acknowledge.enable", "share-renew-acknowledge-enable", Bool(), True,
       "Whether share-group members may RENEW (KIP-1222) the locks of records they hold; when false "
       "a RENEW acknowledgement is refused with INVALID_RECORD_STATE. Kafka has it as a group config "
       "only; here the broker's value is the default of the group config of that name.",
       "share_group:renew_acknowledge_enable", group="share.renew.acknowledge.enable"),
    _s("share.coordinator.state.topic.num.partitions", "share-coordinator-state-topic-partitions", Int(1), 50,
       "Partitions of __share_group_state (the share-partitions' states) when it is first created.",
       "share_group:state_topic_partitions"),
    _s("share.coordinator.state.topic.replication.factor", "share-coordinator-state-topic-replication-factor",
       Int(1), 3, "Replication factor of __share_group_state (capped by the live brokers when created).",
       "share_group:state_topic_replication_factor"),
    _s("share.coordinator.state.topic.min.isr", "share-coordinator-state-topic-min-isr", Int(1), 2,
       "min.insync.replicas of __share_group_state (capped by its replication factor when created).",
       "share_group:state_topic_min_isr"),
    _s("share.coordinator.state.topic.segment.bytes", "share-coordinator-state-topic-segment-bytes", Int(1),
       100 * _MIB, "segment.bytes of __share_group_state when it is first created.",
       "share_group:state_topic_segment_bytes"),
    _s("allow.internal.topic.changes", "allow-internal-topic-changes", Bool(), False,
       "Let DeleteTopics and CreatePartitions change internal topics: deleting __consumer_offsets "
       "erases every committed offset, adding partitions to it can bring back old ones after a "
       "restart. Clients may never produce to them.", "broker:allow_internal_topic_changes"),
    _s("min.free.bytes", "min-free-bytes", Int(0, long=True), 64 * _MIB,
       "Refuse produce (KAFKA_STORAGE_ERROR) when it would leave less free space than this on the "
       "data dir's filesystem (Redpanda's storage_min_free_bytes); 0: no floor.", "broker:min_free_bytes"),
    _s("commitlog.file.bytes", "commitlog-file-bytes", Int(1, long=True), 1 << 30,
       "Size of each commitlog file of the commitlog layout (RocketMQ's mappedFileSizeCommitLog).",
       "broker:commitlog_file_bytes"),
    _s("index.hash.slots", "index-hash-slots", Int(1), 5_000_000,
       "Hash slots per key-index file of the commitlog layout (RocketMQ's maxHashSlotNum).",
       "broker:index_hash_slots"),
    _s("index.max.entries", "index-max-entries", Int(1), 20_000_000,
       "Entries per key-index file of the commitlog layout (RocketMQ's maxIndexNum).", "broker:index_max_entries"),
    _s("max.open.segment.files", "max-open-segment-files", Int(1), None,
       "Per-partition files held open at once, both layouts together (.log, .index, .timeindex; "
       "consume-queue files); the least recently used close and reopen when used "
       "[default: half of RLIMIT_NOFILE].", "broker:max_open_segment_files"),
    _s("replica.alter.log.dirs.io.max.bytes.per.second", "replica-alter-log-dirs-io-max-bytes-per-second",
       Int(1, long=True), LONG_MAX,
       "Bytes per second a move to the other layout's log dir (AlterReplicaLogDirs) copies at most, "
       "so a move leaves the disk to producers and consumers [default: unthrottled].",
       "broker:alter_log_dirs_max_bytes_per_s"),
    _s("etcd.endpoint", "etcd", Text("URL"), None,
       "Join the cluster coordinated by this etcd (e.g. http://127.0.0.1:2379); without it the "
       "broker is a cluster of one. Every member needs its own --node-id.", "broker:etcd"),
    _s("default.replication.factor", "default-replication-factor", Int(1), 1,
       "Replication factor of topics created without one.", "broker:default_replication_factor"),
    _s("min.insync.replicas", "min-insync-replicas", Int(1), 1,
       "In-sync replicas an acks=all produce needs; fewer: NOT_ENOUGH_REPLICAS.", "broker:min_insync_replicas",
       topic="min.insync.replicas"),
    _s("replica.lag.time.max.ms", "replica-lag-time-max-ms", Int(1, long=True), 30_000,
       "A follower not caught up for this long leaves the ISR.", "broker:replica_lag_time_max_ms"),
    _s("replica.fetch.max.bytes", "replica-fetch-max-bytes", Int(0), 1024 * 1024,
       "Bytes a follower asks for per partition in one fetch (the first batch comes whatever its size).",
       "broker:replica_fetch_max_bytes"),
    _s("broker.session.timeout.ms", "broker-session-timeout-ms", Int(1), 9_000,
       "A broker silent for this long loses its etcd lease and its leaderships.",
       "broker:broker_session_timeout_ms"),
    _s("unclean.leader.election.enable", "unclean-leader-election", Bool(), False,
       "Elect a replica outside the ISR when the whole ISR is gone (loses acknowledged records); a "
       "cluster's controller reads each topic's own, else the dynamic broker config of its own id, else "
       "the cluster default's, and elects as soon as a change enables it.", "broker:unclean_leader_election", negatable=True,
       topic="unclean.leader.election.enable"),
    _s("log.cleaner.enable", "log-cleaner-enable", Bool(), True,
       "Compact topics whose cleanup.policy has compact.", "broker:log_cleaner_enable", negatable=True),
    _s("log.cleaner.threads", "log-cleaner-threads", Int(1), 1,
       "Background threads cleaning compacted partitions.", "broker:log_cleaner_threads"),
    _s("log.cleaner.backoff.ms", "log-cleaner-backoff-ms", Int(0, long=True), 15_000,
       "How long a cleaner thread sleeps when no log is due.", "broker:log_cleaner_backoff_ms"),
    _s("log.cleaner.dedupe.buffer.size", "log-cleaner-dedupe-buffer-size", Int(1 << 20, long=True),
       128 * _MIB, "Memory for the cleaners' key -> offset maps, over all threads.",
       "broker:log_cleaner_dedupe_buffer_size"),
    _s("metrics.port", "metrics-port", Int(0, 65535), None,
       "Serve Prometheus metrics on http://HOST:PORT/metrics and readiness on /health (200 once "
       "serving, 503 before); 0: any free port (logged) [default: off].", "broker:metrics_port"),
    _s("console.sample.interval.ms", "console-sample-interval-ms", Int(100, 60_000), 10_000,
       "How often the console (on --metrics-port) samples bytes in and out and each group's lag for "
       "its charts; it keeps the last hour of samples in memory.", "broker:console_sample_interval_ms"),
    _s("event.loop.stall.threshold.ms", "event-loop-stall-threshold-ms", Int(0), 100,
       "Log a warning naming what held the event loop when it runs a timer this much late: every "
       "client of the broker waited that long. 0: no such lines (the lag histogram on --metrics-port "
       "is kept either way).", "broker:event_loop_stall_threshold_ms"),
    _s("log.level", "log-level", Choice(("DEBUG", "INFO", "WARNING", "ERROR"), fold=str.upper), "INFO",
       "Lowest level of the broker's log lines.", "process:log_level", describe=False),
    # Listeners and SASL: security_config.py says what each means
    _s("listeners", "listeners", Text("NAME://HOST:PORT,...", ConfigType.LIST), None,
       "Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://:9093 (overrides "
       "--host/--port) [default: PLAINTEXT://--host:--port].", "security:listeners"),
    _s("advertised.listeners", "advertised-listeners", Text("NAME://HOST:PORT,...", ConfigType.LIST), None,
       "What Metadata names for clients of each listener [default: the listener's own address].",
       "security:advertised_listeners"),
    _s("listener.security.protocol.map", "listener-security-protocol-map", Text("NAME:PROTOCOL,...", ConfigType.LIST),
       DEFAULT_PROTOCOL_MAP, "Each listener's security protocol.", "security:listener_security_protocol_map"),
    _s("inter.broker.listener.name", "inter-broker-listener-name", Text("NAME"), None,
       "The listener brokers fetch from each other on [default: the first listener].",
       "security:inter_broker_listener_name"),
    _s("sasl.enabled.mechanisms", "sasl-enabled-mechanisms", Text("MECHANISM,...", ConfigType.LIST),
       ",".join(MECHANISMS), "SASL mechanisms offered on SASL listeners.",
       "security:sasl_enabled_mechanisms"),
    _s("sasl.plain.users", "sasl-plain-users", _PEM, None,
       'PLAIN users: a file with user_NAME="PASSWORD" entries (Kafka\'s PlainLoginModule JAAS section '
       "works as is).", "security:sasl_plain_users"),
    _s("sasl.scram.users", "sasl-scram-user", Items("SCRAM-SHA-256=[name=N,password=P]"), (),
       "Add or replace a SCRAM user at start-up, salted and stored in the data dir (kafka-storage "
       "format --add-scram syntax); repeatable.", "security:sasl_scram_users", param="sasl_scram_users",
       sensitive=True),
    _s("sasl.mechanism.inter.broker.protocol", "inter-broker-sasl-mechanism", Text("MECHANISM"), None,
       "The mechanism this broker logs in to its peers with.", "security:inter_broker_sasl_mechanism"),
    _s("inter.broker.sasl.username", "inter-broker-sasl-username", Text("NAME"), None,
       "This broker's own SASL user name.", "security:inter_broker_sasl_username"),
    _s("inter.broker.sasl.password", "inter-broker-sasl-password", Text("PASSWORD", ConfigType.PASSWORD), None,
       "This broker's own SASL password.", "security:inter_broker_sasl_password", sensitive=True),
    # TLS: broker/security/tls_config.py says how the PEM files map to Kafka's keystore settings
    _s("ssl.keystore.location", "ssl-keystore-location", _PEM, None,
       "SSL / SASL_SSL listeners: the broker's certificate chain, PEM, leaf first; may hold the "
       "private key too (ssl.keystore.type=PEM).", "security:ssl_keystore_location"),
    _s("ssl.key.location", "ssl-key-location", _PEM, None,
       "The broker's private key, PEM, if not in the keystore file.", "security:ssl_key_location"),
    _s("ssl.key.password", "ssl-key-password", Text("PASSWORD", ConfigType.PASSWORD), None,
       "Password of an encrypted private key.", "security:ssl_key_password", sensitive=True),
    _s("ssl.truststore.location", "ssl-truststore-location", _PEM, None,
       "CA certificates, PEM, that client certificates must chain to.", "security:ssl_truststore_location"),
    _s("ssl.client.auth", "ssl-client-auth", Choice(CLIENT_AUTH), "none",
       "Client certificates on SSL listeners; the subject DN is the principal.", "security:ssl_client_auth"),
    _s("listener.ssl.client.auth", "listener-ssl-client-auth", Items("NAME=VALUE"), (),
       "One listener's ssl.client.auth, SASL_SSL ones included; repeatable. In a file: "
       "listener.name.NAME.ssl.client.auth=VALUE.", "security:listener_ssl_client_auth"),
    # ACLs: acl_options.py checks them together
    _s("authorizer.enable", "authorizer", Bool(), False,
       "Check every request against ACLs (Kafka's authorizer.class.name) [default: off].", "acl:authorizer"),
    _s("super.users", "super-users", Text("User:A;User:B"), "",
       "Principals every check allows, separated by ';'.", "acl:super_users"),
    _s("allow.everyone.if.no.acl.found", "allow-everyone-if-no-acl-found", Bool(), False,
       "Allow a request on a resource no ACL names [default: refuse].", "acl:allow_everyone_if_no_acl_found"),
    # Delegation tokens (KIP-48): delegation_token_options.py
    _s("delegation.token.secret.key", "delegation-token-secret-key", Text("KEY", ConfigType.PASSWORD), None,
       "Key of the delegation tokens' HMACs; the same on every broker of a cluster. Unset or empty: no "
       "delegation tokens (the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED).", "token:secret_key",
       sensitive=True, aliases=("delegation.token.master.key",)),
    _s("delegation.token.max.lifetime.ms", "delegation-token-max-lifetime-ms", Int(1, long=True), 7 * _DAY,
       "A token's maximum lifetime: no renew takes it further.", "token:max_lifetime_ms"),
    _s("delegation.token.expiry.time.ms", "delegation-token-expiry-time-ms", Int(1, long=True), _DAY,
       "How long a new or renewed token is valid before it needs a renew.", "token:expiry_time_ms"),
    _s("delegation.token.expiry.check.interval.ms", "delegation-token-expiry-check-interval-ms",
       Int(1, long=True), 60 * _MINUTE, "How often expired tokens are removed.", "token:expiry_check_interval_ms"),
)

BROKER_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.scope != TOPIC)
TOPIC_CONFIGS: dict[str, Setting] = {s.topic: s for s in sorted(SETTINGS, key=lambda s: s.topic or "") if s.topic}
BY_NAME: dict[str, Setting] = {s.name: s for s in BROKER_SETTINGS}
GROUP_CONFIGS: dict[str, Setting] = {s.group: s for s in sorted(SETTINGS, key=lambda s: s.group or "") if s.group}
BY_KEY: dict[str, Setting] = {**{a: s for s in BROKER_SETTINGS for a in s.aliases}, **BY_NAME}
