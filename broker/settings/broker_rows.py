"""The settings table's rows of the broker process itself: where it listens and keeps its data, how
much it reads of requests, what its storage layouts may use, how it joins a cluster, and what it
shows of itself. Each row is a Setting (setting.py); table.py gathers these with the other subjects'.
"""

from __future__ import annotations

from pathlib import Path

from broker.settings.kinds import LONG_MAX, Bool, Choice, FilePath, Int, Text
from broker.settings.setting import MIB, Setting
from broker.storage.modes import MODES

# Where the broker listens, keeps its data, and what it creates on its own
PROCESS: tuple[Setting, ...] = (
    Setting("log.dirs", "data-dir", FilePath(False), Path("data"), "Directory of the broker's data (one directory).",
            "broker:data_dir", aliases=("log.dir",)),
    Setting("host.name", "host", Text("HOST"), "127.0.0.1", "Address to listen on.", "broker:host"),
    Setting("port", "port", Int(0, 65535), 9092,
            "Port to listen on; 0: any free port (the log line says which, and Metadata advertises it).",
            "broker:port"),
    Setting("advertised.host.name", "advertised-host", Text("HOST"), None,
            "Host name given to clients [default: --host].", "broker:advertised_host"),
    Setting("broker.id", "node-id", Int(0), 1, "This broker's id; each cluster member needs its own.",
            "broker:node_id", aliases=("node.id",)),
    Setting("storage.mode", "storage-mode", Choice(MODES), "segment",
            "Storage layout of new topics, and in a cluster of the new replicas this broker holds (a topic's "
            "explicit storage.mode config overrides it on every broker; a replica keeps the layout it was "
            "created or moved in).", "broker:storage_mode", topic="storage.mode"),
    Setting("num.partitions", "num-partitions", Int(1), 1, "Partitions of auto-created topics.",
            "broker:num_partitions"),
    Setting("auto.create.topics.enable", "auto-create-topics", Bool(), True,
            "Create a topic when Metadata or Produce names one that does not exist.", "broker:auto_create_topics",
            negatable=True),
)

# How much of clients' requests the broker reads, holds and answers
REQUESTS: tuple[Setting, ...] = (
    Setting("socket.request.max.bytes", "socket-request-max-bytes", Int(1), 100 * MIB,
            "Largest request the broker reads; a bigger one closes the connection.", "broker:max_request_size"),
    # Kafka's -1 (unbounded) leans on the JVM's heap limit; a Python process has none, so the
    # default is 5 maximal requests: five 100 MiB producers proceed at once, and a peak is
    # bounded by this + one socket.request.max.bytes instead of by the host's memory.
    Setting("queued.max.request.bytes", "queued-max-request-bytes", Int(-1, long=True), 500 * MIB,
            "Bytes of requests read but not yet handled, over all connections, before the broker stops "
            "reading more; 0 or -1: no bound.", "broker:queued_max_request_bytes"),
    Setting("connections.max.idle.ms", "connections-max-idle-ms", Int(-1, long=True), 600_000,
            "Close a connection that has neither read nor written for this long; -1: never.",
            "broker:connections_max_idle_ms"),
    Setting("quota.window.num", "quota-window-num", Int(1), 11,
            "Samples a client quota's rate is measured over (Kafka's quota.window.num).",
            "broker:quota_window_num"),
    Setting("quota.window.size.seconds", "quota-window-size-seconds", Int(1), 1,
            "Seconds of one such sample (Kafka's quota.window.size.seconds).", "broker:quota_window_size_seconds"),
    Setting("fetch.max.bytes", "fetch-max-bytes", Int(0), 55 * MIB,
            "The most one Fetch response holds, whatever the client asks; the first batch still goes "
            "whole, so a consumer always progresses.", "broker:fetch_max_bytes"),
)

# Internal topics' guard, and what the storage layouts may use of the disk and of open files
STORAGE: tuple[Setting, ...] = (
    Setting("allow.internal.topic.changes", "allow-internal-topic-changes", Bool(), False,
            "Let DeleteTopics and CreatePartitions change internal topics: deleting __consumer_offsets "
            "erases every committed offset, adding partitions to it can bring back old ones after a "
            "restart. Clients may never produce to them.", "broker:allow_internal_topic_changes"),
    Setting("min.free.bytes", "min-free-bytes", Int(0, long=True), 64 * MIB,
            "Refuse produce (KAFKA_STORAGE_ERROR) when it would leave less free space than this on the "
            "data dir's filesystem (Redpanda's storage_min_free_bytes); 0: no floor.", "broker:min_free_bytes"),
    Setting("commitlog.file.bytes", "commitlog-file-bytes", Int(1, long=True), 1 << 30,
            "Size of each commitlog file of the commitlog layout (RocketMQ's mappedFileSizeCommitLog).",
            "broker:commitlog_file_bytes"),
    Setting("index.hash.slots", "index-hash-slots", Int(1), 5_000_000,
            "Hash slots per key-index file of the commitlog layout (RocketMQ's maxHashSlotNum).",
            "broker:index_hash_slots"),
    Setting("index.max.entries", "index-max-entries", Int(1), 20_000_000,
            "Entries per key-index file of the commitlog layout (RocketMQ's maxIndexNum).", "broker:index_max_entries"),
    Setting("max.open.segment.files", "max-open-segment-files", Int(1), None,
            "Per-partition files held open at once, both layouts together (.log, .index, .timeindex; "
            "consume-queue files); the least recently used close and reopen when used "
            "[default: half of RLIMIT_NOFILE].", "broker:max_open_segment_files"),
    Setting("replica.alter.log.dirs.io.max.bytes.per.second", "replica-alter-log-dirs-io-max-bytes-per-second",
            Int(1, long=True), LONG_MAX,
            "Bytes per second a move to the other layout's log dir (AlterReplicaLogDirs) copies at most, "
            "so a move leaves the disk to producers and consumers [default: unthrottled].",
            "broker:alter_log_dirs_max_bytes_per_s"),
)

# Membership of a cluster and the replication of its partitions
CLUSTER: tuple[Setting, ...] = (
    Setting("etcd.endpoint", "etcd", Text("URL"), None,
            "Join the cluster coordinated by this etcd (e.g. http://127.0.0.1:2379); without it the "
            "broker is a cluster of one. Every member needs its own --node-id.", "broker:etcd"),
    Setting("default.replication.factor", "default-replication-factor", Int(1), 1,
            "Replication factor of topics created without one.", "broker:default_replication_factor"),
    Setting("min.insync.replicas", "min-insync-replicas", Int(1), 1,
            "In-sync replicas an acks=all produce needs; fewer: NOT_ENOUGH_REPLICAS.", "broker:min_insync_replicas",
            topic="min.insync.replicas"),
    Setting("replica.lag.time.max.ms", "replica-lag-time-max-ms", Int(1, long=True), 30_000,
            "A follower not caught up for this long leaves the ISR.", "broker:replica_lag_time_max_ms"),
    Setting("replica.fetch.max.bytes", "replica-fetch-max-bytes", Int(0), 1024 * 1024,
            "Bytes a follower asks for per partition in one fetch (the first batch comes whatever its size).",
            "broker:replica_fetch_max_bytes"),
    Setting("max.incremental.fetch.session.cache.slots", "max-incremental-fetch-session-cache-slots", Int(0), 1000,
            "Incremental fetch sessions (KIP-227) the broker keeps for followers fetching from it; past it the "
            "least recently used goes. 0: none, every follower fetch is full.",
            "broker:max_incremental_fetch_session_cache_slots"),
    Setting("broker.session.timeout.ms", "broker-session-timeout-ms", Int(1), 9_000,
            "A broker silent for this long loses its etcd lease and its leaderships.",
            "broker:broker_session_timeout_ms"),
    Setting("unclean.leader.election.enable", "unclean-leader-election", Bool(), False,
            "Elect a replica outside the ISR when the whole ISR is gone (loses acknowledged records); a "
            "cluster's controller reads each topic's own, else the dynamic broker config of its own id, else "
            "the cluster default's, and elects as soon as a change enables it.", "broker:unclean_leader_election",
            negatable=True, topic="unclean.leader.election.enable"),
)

# What the broker shows of itself: metrics, the console, stalls and log lines
OBSERVABILITY: tuple[Setting, ...] = (
    Setting("metrics.port", "metrics-port", Int(0, 65535), None,
            "Serve Prometheus metrics on http://HOST:PORT/metrics and readiness on /health (200 once "
            "serving, 503 before); 0: any free port (logged) [default: off].", "broker:metrics_port"),
    Setting("console.sample.interval.ms", "console-sample-interval-ms", Int(100, 60_000), 10_000,
            "How often the console (on --metrics-port) samples bytes in and out and each group's lag for "
            "its charts; it keeps the last hour of samples in memory.", "broker:console_sample_interval_ms"),
    Setting("event.loop.stall.threshold.ms", "event-loop-stall-threshold-ms", Int(0), 100,
            "Log a warning naming what held the event loop when it runs a timer this much late: every "
            "client of the broker waited that long. 0: no such lines (the lag histogram on --metrics-port "
            "is kept either way).", "broker:event_loop_stall_threshold_ms"),
    Setting("log.level", "log-level", Choice(("DEBUG", "INFO", "WARNING", "ERROR"), fold=str.upper), "INFO",
            "Lowest level of the broker's log lines.", "process:log_level", describe=False),
)
