"""The settings table's rows of the log: the broker's defaults of the topic configs, the topic configs
with no broker setting, and the log cleaner. Each row is a Setting (setting.py); table.py gathers
these with the other subjects'.
"""

from __future__ import annotations

from broker.settings.kinds import LONG_MAX, Bool, Choice, ChoiceList, Double, Int, ThrottledReplicas
from broker.settings.setting import DAY, MIB, MINUTE, Setting

_LEVEL = ("The level the broker compresses at when compression.type makes it rewrite a producer's batch "
          "in this codec; a batch kept as the producer compressed it keeps the producer's level.")
_NO_THROTTLE = ("Kept and shown only: the broker has no replication quotas (leader/follower."
                "replication.throttled.rate), so the replicas listed are not throttled.")
_NO_TIERING = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
_LOCAL_RETENTION = ("Kept and shown only: without tiered storage the local log is the whole log, which "
                    "retention.ms and retention.bytes govern; -2: those.")
_NO_REMOTE = "Kept and shown only: without tiered storage nothing is copied to or deleted from remote storage."


def _topic(name, kind, default, doc, target) -> Setting:
    return Setting(name, None, kind, default, doc, target, topic=name, describe=False)


# The broker's defaults of topic configs, then the topic configs with no broker setting
LOG: tuple[Setting, ...] = (
    Setting("log.segment.bytes", "segment-bytes", Int(14), 1 << 30,
            "Size at which a segment rolls.", "log:segment_bytes", topic="segment.bytes"),
    Setting("log.retention.ms", "retention-ms", Int(-1, long=True), 7 * DAY,
            "How long records are kept; -1: forever.", "log:retention_ms", topic="retention.ms",
            coarser=(("log.retention.minutes", MINUTE), ("log.retention.hours", 60 * MINUTE))),
    Setting("log.retention.bytes", "retention-bytes", Int(-1, long=True), -1,
            "Bytes a partition keeps before its oldest segments go; -1: no limit.", "log:retention_bytes",
            topic="retention.bytes"),
    Setting("log.retention.check.interval.ms", "retention-check-ms", Int(1, long=True), 5 * MINUTE,
            "How often retention is applied.", "broker:retention_check_ms"),
    Setting("log.flush.interval.messages", "flush-messages", Int(0, long=True, never=0), 0,
            "fsync every N messages; 1: before acknowledging (group commit); 0: leave it to the page "
            "cache (DescribeConfigs says 9223372036854775807, Kafka's never).", "log:flush_messages",
            topic="flush.messages"),
    Setting("log.flush.interval.ms", "flush-interval-ms", Int(-1, long=True, never=-1), -1,
            "fsync a partition's data once it is this old; -1: leave it to the page cache (DescribeConfigs "
            "says 9223372036854775807, Kafka's never). The commitlog layout's partitions share one file: "
            "it is fsynced when any of its partitions is due.", "log:flush_ms", topic="flush.ms"),
    Setting("log.segment.delete.delay.ms", "file-delete-delay-ms", Int(0, long=True), 60_000,
            "How long a deleted partition's files stay (renamed) before they are removed, and in the "
            "commitlog layout how long a deleted commitlog file stays open for fetches still sending "
            "from it (those files are shared, so the broker's value governs them). The segment "
            "layout's segments need no delay: a fetch holds its file open.", "log:file_delete_delay_ms",
            topic="file.delete.delay.ms"),
    Setting("log.index.interval.bytes", "log-index-interval-bytes", Int(0), 4096,
            "Bytes between offset-index entries.", "log:index_interval_bytes", topic="index.interval.bytes"),
    Setting("message.max.bytes", "message-max-bytes", Int(0), MIB + 12,
            "Largest record batch a topic accepts.", "log:max_message_bytes", topic="max.message.bytes"),
    # Topic configs with no broker setting here: a topic that does not set one has this default
    _topic("segment.ms", Int(1, long=True), 7 * DAY, "Age at which a segment rolls even if not full.",
           "log:segment_ms"),
    _topic("segment.jitter.ms", Int(0, long=True), 0,
           "A segment rolls up to this much (drawn per segment) before segment.ms, so partitions do "
           "not all roll at once. The commitlog layout's files roll by size alone "
           "(commitlog.file.bytes): there it shapes only what the cleaner compacts together.",
           "log:segment_jitter_ms"),
    _topic("segment.index.bytes", Int(8), 10 * MIB,
           "Kept and shown only: the offset index here grows with its segment, one entry per "
           "index.interval.bytes, rather than being preallocated.", None),
    _topic("message.timestamp.type", Choice(("CreateTime", "LogAppendTime")), "CreateTime",
           "The timestamp records keep: the producer's (CreateTime) or the broker's when it appends "
           "them (LogAppendTime).", "log:message_timestamp_type"),
    _topic("message.timestamp.before.max.ms", Int(0, long=True), LONG_MAX,
           "How far before the broker's clock a CreateTime record's timestamp may be; a batch with "
           "one older is refused (INVALID_TIMESTAMP, naming each such record).",
           "log:message_timestamp_before_max_ms"),
    _topic("message.timestamp.after.max.ms", Int(0, long=True), 60 * MINUTE,
           "How far after the broker's clock a CreateTime record's timestamp may be; a batch with "
           "one later is refused (INVALID_TIMESTAMP, naming each such record). One hour by default, "
           "as in Kafka 4 (KIP-1030): a record stamped far ahead keeps its segment from "
           "time-based retention.",
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
    _topic("delete.retention.ms", Int(0, long=True), DAY, "How long tombstones stay in a compacted log.",
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
)

# The cleaner that compacts topics whose cleanup.policy has compact
CLEANER: tuple[Setting, ...] = (
    Setting("log.cleaner.enable", "log-cleaner-enable", Bool(), True,
            "Compact topics whose cleanup.policy has compact.", "broker:log_cleaner_enable", negatable=True),
    Setting("log.cleaner.threads", "log-cleaner-threads", Int(1), 1,
            "Background threads cleaning compacted partitions.", "broker:log_cleaner_threads"),
    Setting("log.cleaner.backoff.ms", "log-cleaner-backoff-ms", Int(0, long=True), 15_000,
            "How long a cleaner thread sleeps when no log is due.", "broker:log_cleaner_backoff_ms"),
    Setting("log.cleaner.dedupe.buffer.size", "log-cleaner-dedupe-buffer-size", Int(1 << 20, long=True),
            128 * MIB, "Memory for the cleaners' key -> offset maps, over all threads.",
            "broker:log_cleaner_dedupe_buffer_size"),
)
