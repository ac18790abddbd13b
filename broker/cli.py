"""`twinlog` command line: `twinlog serve` runs a broker until SIGTERM/SIGINT.

Only what the options' defaults need is imported here; the broker itself (the codec, both
storage engines, asyncio) is imported when `serve` runs, so `twinlog --help` and `--version`
answer at once.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import click

from segment.log import LogConfig

from .cli_cluster import cluster_group
from .cli_consume import consume_command
from .cli_dump import dump_command
from .cli_groups import groups_group
from .cli_produce import produce_command
from .cli_topics import topics_group
from .cli_acl_options import acl_options, authorizer_settings
from .cli_security_options import security_config, security_options
from .config import BrokerConfig
from .log_rate_limit import install as limit_repeated_log_lines
from .lookup_command import lookup_command
from .storage_modes import MODES

_DEFAULTS = LogConfig()
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@click.group()
@click.version_option(package_name="twinlog", prog_name="twinlog")
def main() -> None:
    """twinlog: a Kafka-compatible broker with two storage layouts."""


@main.command("serve")
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data"), show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=9092, show_default=True,
              help="Port to listen on; 0: any free port (the log line says which, and Metadata advertises it).")
@click.option("--advertised-host", default=None, help="Host name given to clients (default: --host).")
@click.option("--node-id", type=int, default=1, show_default=True)
@click.option("--storage-mode", type=click.Choice(MODES), default="segment", show_default=True,
              help="Storage layout of new topics (a topic's storage.mode config overrides it).")
@click.option("--num-partitions", type=int, default=1, show_default=True, help="Partitions of auto-created topics.")
@click.option("--auto-create-topics/--no-auto-create-topics", default=True, show_default=True)
@click.option("--segment-bytes", type=int, default=_DEFAULTS.segment_bytes, show_default=True)
@click.option("--retention-ms", type=int, default=_DEFAULTS.retention_ms, show_default=True)
@click.option("--retention-bytes", type=int, default=_DEFAULTS.retention_bytes, show_default=True)
@click.option("--retention-check-ms", type=int, default=300_000, show_default=True)
@click.option(
    "--flush-messages", type=int, default=0, show_default=True,
    help="1: fsync before acknowledging (group commit); 0: leave it to the page cache.",
)
@click.option("--flush-interval-ms", type=int, default=-1, show_default=True,
              help="fsync every log at this interval (log.flush.interval.ms); -1: leave it to the page cache.")
@click.option("--offsets-topic-partitions", type=int, default=50, show_default=True,
              help="Partitions of __consumer_offsets when it is first created.")
@click.option("--offsets-topic-segment-bytes", type=click.IntRange(min=1), default=BrokerConfig.offsets_topic_segment_bytes,
              show_default=True, help="segment.bytes of __consumer_offsets when it is first created "
                                      "(offsets.topic.segment.bytes): the cleaner compacts closed segments only.")
@click.option("--group-initial-rebalance-delay-ms", type=int, default=3000, show_default=True,
              help="How long a new group waits for more members before its first assignment.")
@click.option("--group-min-session-timeout-ms", type=int, default=6_000, show_default=True,
              help="Shortest session timeout a member may ask for (group.min.session.timeout.ms).")
@click.option("--group-max-session-timeout-ms", type=int, default=1_800_000, show_default=True,
              help="Longest session timeout a member may ask for (group.max.session.timeout.ms).")
@click.option("--allow-internal-topic-changes", is_flag=True, default=False,
              help="Let DeleteTopics and CreatePartitions change internal topics: deleting "
                   "__consumer_offsets erases every committed offset, adding partitions to it can "
                   "bring back old ones after a restart. Clients may never produce to them.")
@click.option("--fetch-max-bytes", type=int, default=BrokerConfig.fetch_max_bytes, show_default=True,
              help="The most one Fetch response holds, whatever the client asks (fetch.max.bytes); "
                   "the first batch still goes whole, so a consumer always progresses.")
@click.option("--min-free-bytes", type=int, default=BrokerConfig.min_free_bytes, show_default=True,
              help="Refuse produce (KAFKA_STORAGE_ERROR) when it would leave less free space than this on "
                   "the data dir's filesystem (Redpanda's storage_min_free_bytes); 0: no floor.")
@click.option("--commitlog-file-bytes", type=int, default=BrokerConfig.commitlog_file_bytes, show_default=True,
              help="Size of each commitlog file of the commitlog layout (RocketMQ's mappedFileSizeCommitLog).")
@click.option("--index-hash-slots", type=int, default=BrokerConfig.index_hash_slots, show_default=True,
              help="Hash slots per key-index file of the commitlog layout (RocketMQ's maxHashSlotNum).")
@click.option("--index-max-entries", type=int, default=BrokerConfig.index_max_entries, show_default=True,
              help="Entries per key-index file of the commitlog layout (RocketMQ's maxIndexNum).")
@click.option("--max-open-segment-files", type=click.IntRange(min=1), default=None,
              help="Per-partition files held open at once, both layouts together (the segment layout's "
                   ".log, .index, .timeindex; the commitlog layout's consume-queue files); the least "
                   "recently used close and reopen when used [default: half of RLIMIT_NOFILE].")
@click.option("--file-delete-delay-ms", type=int, default=_DEFAULTS.file_delete_delay_ms, show_default=True,
              help="How long a deleted log file stays open for fetches still sending from it; its disk "
                   "space returns after this (log.segment.delete.delay.ms).")
@click.option("--etcd", default=None, metavar="URL",
              help="Join the cluster coordinated by this etcd (e.g. http://127.0.0.1:2379); "
                   "without it the broker is a cluster of one. Every member needs its own --node-id.")
@click.option("--default-replication-factor", type=int, default=BrokerConfig.default_replication_factor,
              show_default=True, help="Replication factor of topics created without one (default.replication.factor).")
@click.option("--min-insync-replicas", type=int, default=BrokerConfig.min_insync_replicas, show_default=True,
              help="In-sync replicas an acks=all produce needs, unless the topic sets min.insync.replicas.")
@click.option("--replica-lag-time-max-ms", type=int, default=BrokerConfig.replica_lag_time_max_ms,
              show_default=True, help="A follower not caught up for this long leaves the ISR (replica.lag.time.max.ms).")
@click.option("--broker-session-timeout-ms", type=int, default=BrokerConfig.broker_session_timeout_ms,
              show_default=True, help="A broker silent for this long loses its etcd lease and its leaderships.")
@click.option("--offsets-topic-replication-factor", type=int,
              default=BrokerConfig.offsets_topic_replication_factor, show_default=True,
              help="Replication factor of __consumer_offsets (capped by the live brokers when created).")
@click.option("--unclean-leader-election/--no-unclean-leader-election", default=False, show_default=True,
              help="Elect a replica outside the ISR when the whole ISR is gone (loses acknowledged records).")
@click.option("--queued-max-request-bytes", type=int, default=BrokerConfig.queued_max_request_bytes,
              show_default=True, help="Bytes of requests read but not yet handled, over all connections, "
                                      "before the broker stops reading more (queued.max.request.bytes; 0 or -1: no bound).")
@click.option("--connections-max-idle-ms", type=int, default=BrokerConfig.connections_max_idle_ms,
              show_default=True, help="Close a connection that has neither read nor written for this long "
                                      "(connections.max.idle.ms; -1: never).")
@click.option("--log-cleaner-enable/--no-log-cleaner-enable", default=BrokerConfig.log_cleaner_enable,
              show_default=True, help="Compact topics whose cleanup.policy has compact (log.cleaner.enable).")
@click.option("--log-cleaner-threads", type=click.IntRange(min=1), default=BrokerConfig.log_cleaner_threads,
              show_default=True, help="Background threads cleaning compacted partitions (log.cleaner.threads).")
@click.option("--log-cleaner-backoff-ms", type=click.IntRange(min=0), default=BrokerConfig.log_cleaner_backoff_ms,
              show_default=True, help="How long a cleaner thread sleeps when no log is due (log.cleaner.backoff.ms).")
@click.option("--log-cleaner-dedupe-buffer-size", type=click.IntRange(min=1 << 20),
              default=BrokerConfig.log_cleaner_dedupe_buffer_size, show_default=True,
              help="Memory for the cleaners' key -> offset maps, over all threads (log.cleaner.dedupe.buffer.size).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve Prometheus metrics on http://HOST:PORT/metrics and readiness on /health "
                   "(200 once serving, 503 before); 0: any free port (logged) [default: off].")
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default="INFO", show_default=True)
@security_options
@acl_options
def serve_command(data_dir, host, port, advertised_host, node_id, storage_mode, num_partitions,
                  auto_create_topics, segment_bytes, retention_ms, retention_bytes,
                  retention_check_ms, flush_messages, flush_interval_ms, offsets_topic_partitions, offsets_topic_segment_bytes,
                  group_initial_rebalance_delay_ms, group_min_session_timeout_ms,
                  group_max_session_timeout_ms, allow_internal_topic_changes, fetch_max_bytes, min_free_bytes,
                  commitlog_file_bytes, index_hash_slots, index_max_entries, max_open_segment_files,
                  file_delete_delay_ms, etcd, default_replication_factor, min_insync_replicas, replica_lag_time_max_ms,
                  broker_session_timeout_ms, offsets_topic_replication_factor, unclean_leader_election,
                  queued_max_request_bytes, connections_max_idle_ms, log_cleaner_enable, log_cleaner_threads,
                  log_cleaner_backoff_ms, log_cleaner_dedupe_buffer_size, metrics_port, log_level, **security) -> None:
    """Run a broker."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    limit_repeated_log_lines()  # a misbehaving client must not fill the disk with log lines
    defaults = replace(
        LogConfig(), segment_bytes=segment_bytes, retention_ms=retention_ms,
        retention_bytes=retention_bytes, flush_messages=flush_messages,
        file_delete_delay_ms=file_delete_delay_ms,
    )
    authorizer = authorizer_settings(security)  # takes its options out of **security
    security = security_config(**security, advertised_host=advertised_host)  # before logging: a bad flag is one line
    config = BrokerConfig(
        data_dir=data_dir, host=host, port=port, advertised_host=advertised_host, node_id=node_id, security=security,
        authorizer=authorizer,
        storage_mode=storage_mode, num_partitions=num_partitions, auto_create_topics=auto_create_topics,
        retention_check_ms=retention_check_ms, flush_interval_ms=flush_interval_ms, log_defaults=defaults,
        offsets_topic_partitions=offsets_topic_partitions, offsets_topic_segment_bytes=offsets_topic_segment_bytes,
        group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
        group_min_session_timeout_ms=group_min_session_timeout_ms,
        group_max_session_timeout_ms=group_max_session_timeout_ms,
        allow_internal_topic_changes=allow_internal_topic_changes,
        fetch_max_bytes=fetch_max_bytes, min_free_bytes=min_free_bytes, commitlog_file_bytes=commitlog_file_bytes,
        index_hash_slots=index_hash_slots, index_max_entries=index_max_entries,
        max_open_segment_files=max_open_segment_files,
        etcd=etcd, default_replication_factor=default_replication_factor, min_insync_replicas=min_insync_replicas,
        replica_lag_time_max_ms=replica_lag_time_max_ms, broker_session_timeout_ms=broker_session_timeout_ms,
        offsets_topic_replication_factor=offsets_topic_replication_factor,
        unclean_leader_election=unclean_leader_election,
        queued_max_request_bytes=queued_max_request_bytes, connections_max_idle_ms=connections_max_idle_ms,
        log_cleaner_enable=log_cleaner_enable, log_cleaner_threads=log_cleaner_threads,
        log_cleaner_backoff_ms=log_cleaner_backoff_ms, log_cleaner_dedupe_buffer_size=log_cleaner_dedupe_buffer_size,

        metrics_port=metrics_port,
    )
    import asyncio

    from .lifecycle import run

    asyncio.run(run(config))


# The client commands import only click at load time (their modules load the rest when run).
for command in (topics_group, produce_command, consume_command, groups_group, cluster_group, dump_command,
                lookup_command):
    main.add_command(command)


if __name__ == "__main__":
    main()
