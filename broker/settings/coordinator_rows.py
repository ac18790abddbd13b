"""The settings table's rows of the coordinators: the internal topics of groups and transactions, the
transaction coordinator, and classic, KIP-848 consumer, KIP-1071 streams and KIP-932 share groups.
Each row is a Setting (setting.py); table.py gathers these with the other subjects'.
"""

from __future__ import annotations

from broker.settings.kinds import Bool, Choice, ChoiceList, Int
from broker.settings.setting import DAY, MIB, Setting
from broker.settings.share_offset_reset import ShareOffsetReset

COORDINATORS: tuple[Setting, ...] = (
    Setting("offsets.topic.num.partitions", "offsets-topic-partitions", Int(1), 50,
            "Partitions of __consumer_offsets when it is first created.", "broker:offsets_topic_partitions"),
    Setting("offsets.topic.segment.bytes", "offsets-topic-segment-bytes", Int(1), 100 * MIB,
            "segment.bytes of __consumer_offsets when it is first created: the cleaner compacts closed "
            "segments only.", "broker:offsets_topic_segment_bytes"),
    Setting("offsets.topic.replication.factor", "offsets-topic-replication-factor", Int(1),
            3,
            "Replication factor of __consumer_offsets (capped by the live brokers when created).",
            "broker:offsets_topic_replication_factor"),
    Setting("transaction.state.log.num.partitions", "transaction-state-log-partitions", Int(1), 50,
            "Partitions of __transaction_state when it is first created.", "broker:txn_topic_partitions"),
    Setting("transaction.state.log.replication.factor", "transaction-state-log-replication-factor", Int(1), 3,
            "Replication factor of __transaction_state (capped by the live brokers when created).",
            "broker:txn_topic_replication_factor"),
    Setting("transaction.state.log.min.isr", "transaction-state-log-min-isr", Int(1), 2,
            "min.insync.replicas of __transaction_state (capped by its replication factor when created, so "
            "one broker can serve transactions).", "broker:txn_topic_min_isr"),
    Setting("transaction.state.log.segment.bytes", "transaction-state-log-segment-bytes", Int(1), 100 * MIB,
            "segment.bytes of __transaction_state when it is first created.", "broker:txn_topic_segment_bytes"),
    Setting("transaction.max.timeout.ms", "transaction-max-timeout-ms", Int(1), 900_000,
            "Longest transaction.timeout.ms a producer may ask for (InitProducerId answers "
            "INVALID_TRANSACTION_TIMEOUT above it).", "broker:txn_max_timeout_ms"),
    Setting("transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "transaction-abort-timed-out-transaction-cleanup-interval-ms", Int(1), 10_000,
            "How often the coordinator aborts transactions open longer than their timeout.",
            "broker:txn_abort_timed_out_interval_ms"),
    Setting("transaction.partition.verification.enable", "transaction-partition-verification-enable", Bool(), True,
            "A partition's leader asks the transaction coordinator whether a transaction's first batch in it "
            "belongs to the producer's open transaction before appending it (KIP-890 part 1; clients of "
            "Produce v12+, transactions V2, have the partition added whatever this says). Off: such a batch of "
            "an older client is appended unasked, and a late one may hold the last stable offset until the "
            "transaction times out.", "broker:txn_partition_verification", negatable=True),
    Setting("transaction.version", "transaction-version", Int(0, 2), 2,
            "The level Kafka's transaction.version feature starts finalized at, until an UpdateFeatures "
            "finalizes another (kept in features.json, or etcd on a cluster, which then wins over this setting); "
            "ApiVersions advertises it: at 2 "
            "clients of transactions V2 (the Java client 4.x) end every transaction with an epoch bump and let "
            "partition leaders and the group coordinator add partitions to it (KIP-890); at 0 or 1 they use "
            "AddPartitionsToTxn and AddOffsetsToTxn as before. Requests are served by their version whatever "
            "the level. 2 is what a new Kafka 4.x cluster finalizes.", "broker:transaction_version"),
    Setting("add.partitions.to.txn.retry.backoff.ms", "add-partitions-to-txn-retry-backoff-ms", Int(1), 20,
            "How long a partition leader (or the group coordinator) waits before asking the transaction "
            "coordinator again to add a transactions V2 producer's partition it answered "
            "CONCURRENT_TRANSACTIONS (the producer's last transaction still ending).",
            "broker:add_partitions_retry_backoff_ms"),
    Setting("add.partitions.to.txn.retry.backoff.max.ms", "add-partitions-to-txn-retry-backoff-max-ms", Int(0), 100,
            "How long those asks go on before CONCURRENT_TRANSACTIONS is answered to the producer, which "
            "retries.", "broker:add_partitions_retry_backoff_max_ms"),
    Setting("transactional.id.expiration.ms", "transactional-id-expiration-ms", Int(1), 7 * DAY,
            "A transactional id with no transaction open and no request for this long is forgotten.",
            "broker:txn_id_expiration_ms"),
    Setting("transaction.remove.expired.transaction.cleanup.interval.ms",
            "transaction-remove-expired-transaction-cleanup-interval-ms", Int(1), 3_600_000,
            "How often the coordinator forgets expired transactional ids.", "broker:txn_remove_expired_interval_ms"),
    Setting("group.initial.rebalance.delay.ms", "group-initial-rebalance-delay-ms", Int(0),
            3000,
            "How long a new group waits for more members before its first assignment.",
            "broker:group_initial_rebalance_delay_ms"),
    Setting("group.min.session.timeout.ms", "group-min-session-timeout-ms", Int(0), 6_000,
            "Shortest session timeout a member may ask for.", "broker:group_min_session_timeout_ms"),
    Setting("group.max.session.timeout.ms", "group-max-session-timeout-ms", Int(0), 1_800_000,
            "Longest session timeout a member may ask for.", "broker:group_max_session_timeout_ms"),
    # KIP-848 consumer groups: consumer_group_options.py checks each value against its min/max
    Setting("group.consumer.heartbeat.interval.ms", "group-consumer-heartbeat-interval-ms", Int(1), 5_000,
            "How often members of consumer-protocol groups heartbeat (the interval every heartbeat "
            "answers).", "consumer_group:heartbeat_interval_ms"),
    Setting("group.consumer.min.heartbeat.interval.ms", "group-consumer-min-heartbeat-interval-ms", Int(1), 5_000,
            "Smallest group.consumer.heartbeat.interval.ms allowed.", "consumer_group:min_heartbeat_interval_ms"),
    Setting("group.consumer.max.heartbeat.interval.ms", "group-consumer-max-heartbeat-interval-ms", Int(1), 15_000,
            "Largest group.consumer.heartbeat.interval.ms allowed.", "consumer_group:max_heartbeat_interval_ms"),
    Setting("group.consumer.session.timeout.ms", "group-consumer-session-timeout-ms", Int(1), 45_000,
            "A consumer-protocol member that does not heartbeat for this long is removed and its "
            "partitions reassigned.", "consumer_group:session_timeout_ms"),
    Setting("group.consumer.min.session.timeout.ms", "group-consumer-min-session-timeout-ms", Int(1), 45_000,
            "Smallest group.consumer.session.timeout.ms allowed.", "consumer_group:min_session_timeout_ms"),
    Setting("group.consumer.max.session.timeout.ms", "group-consumer-max-session-timeout-ms", Int(1), 60_000,
            "Largest group.consumer.session.timeout.ms allowed.", "consumer_group:max_session_timeout_ms"),
    Setting("group.consumer.assignors", "group-consumer-assignors", ChoiceList(("uniform", "range")), "uniform,range",
            "Server-side assignors of consumer-protocol groups; a member picks one with "
            "group.remote.assignor, the first is the default.", "consumer_group:assignors"),
    Setting("group.consumer.migration.policy", "group-consumer-migration-policy",
            Choice(("bidirectional", "upgrade", "downgrade", "disabled")), "bidirectional",
            "Whether a classic group becomes a consumer group when a member of the new protocol joins "
            "(upgrade), and back when the last one leaves (downgrade).", "consumer_group:migration_policy"),
    # KIP-1071 streams groups: streams_group_options.py gathers them
    Setting("group.streams.heartbeat.interval.ms", "group-streams-heartbeat-interval-ms", Int(1), 5_000,
            "How often members of streams groups heartbeat.", "streams_group:heartbeat_interval_ms"),
    Setting("group.streams.session.timeout.ms", "group-streams-session-timeout-ms", Int(1), 45_000,
            "A streams-group member that does not heartbeat for this long is removed and its tasks "
            "reassigned.", "streams_group:session_timeout_ms"),
    Setting("group.streams.num.standby.replicas", "group-streams-num-standby-replicas", Int(0), 0,
            "Standby tasks per stateful task of a streams group, each on another process than the "
            "task's active one.", "streams_group:num_standby_replicas"),
    Setting("group.streams.max.standby.replicas", "group-streams-max-standby-replicas", Int(0), 2,
            "Largest group.streams.num.standby.replicas allowed.", "streams_group:max_standby_replicas"),
    # KIP-932 share groups: share_group_options.py gathers them
    Setting("group.share.record.lock.duration.ms", "group-share-record-lock-duration-ms", Int(1), 30_000,
            "How long a share-group member holds the records it acquired: unacknowledged by then, they "
            "are handed to another member.", "share_group:lock_ms", group="share.record.lock.duration.ms"),
    Setting("group.share.min.record.lock.duration.ms", "group-share-min-record-lock-duration-ms", Int(1000), 15_000,
            "Smallest share.record.lock.duration.ms a group may set.", "share_group:min_lock_ms"),
    Setting("group.share.max.record.lock.duration.ms", "group-share-max-record-lock-duration-ms", Int(1000), 60_000,
            "Largest share.record.lock.duration.ms a group may set.", "share_group:max_lock_ms"),
    Setting("group.share.delivery.count.limit", "group-share-delivery-count-limit", Int(2, 10), 5,
            "How many times a record is delivered to share-group members before it is archived, never "
            "delivered again.", "share_group:delivery_limit", group="share.delivery.count.limit"),
    Setting("group.share.min.delivery.count.limit", "group-share-min-delivery-count-limit", Int(2, 10), 2,
            "Smallest share.delivery.count.limit a group may set.", "share_group:min_delivery_limit"),
    Setting("group.share.max.delivery.count.limit", "group-share-max-delivery-count-limit", Int(2, 10), 10,
            "Largest share.delivery.count.limit a group may set.", "share_group:max_delivery_limit"),
    Setting("group.share.partition.max.record.locks", "group-share-partition-max-record-locks", Int(100, 10_000), 2_000,
            "Most records of one share-partition in flight (between its start offset and the furthest "
            "delivered) at once.", "share_group:max_in_flight", group="share.partition.max.record.locks"),
    Setting("group.share.session.timeout.ms", "group-share-session-timeout-ms", Int(1), 45_000,
            "A share-group member that does not heartbeat for this long is removed and its acquired "
            "records released.", "share_group:session_timeout_ms", group="share.session.timeout.ms"),
    Setting("group.share.min.session.timeout.ms", "group-share-min-session-timeout-ms", Int(1), 45_000,
            "Smallest share.session.timeout.ms a group may set.", "share_group:min_session_timeout_ms"),
    Setting("group.share.max.session.timeout.ms", "group-share-max-session-timeout-ms", Int(1), 60_000,
            "Largest share.session.timeout.ms a group may set.", "share_group:max_session_timeout_ms"),
    Setting("group.share.heartbeat.interval.ms", "group-share-heartbeat-interval-ms", Int(1), 5_000,
            "How often share-group members heartbeat.", "share_group:heartbeat_interval_ms",
            group="share.heartbeat.interval.ms"),
    Setting("group.share.min.heartbeat.interval.ms", "group-share-min-heartbeat-interval-ms", Int(1), 5_000,
            "Smallest share.heartbeat.interval.ms a group may set.", "share_group:min_heartbeat_interval_ms"),
    Setting("group.share.max.heartbeat.interval.ms", "group-share-max-heartbeat-interval-ms", Int(1), 15_000,
            "Largest share.heartbeat.interval.ms a group may set.", "share_group:max_heartbeat_interval_ms"),
    Setting("share.auto.offset.reset", "share-auto-offset-reset", ShareOffsetReset(), "latest",
            "Where a share group starts in a partition it has never consumed: latest, earliest, or "
            "by_duration:<ISO-8601 duration> (the first record at or after now less it). Kafka has it as a "
            "group config only; here the broker's value is the default of the group config of that name.",
            "share_group:auto_offset_reset", group="share.auto.offset.reset"),
    Setting("share.isolation.level", "share-isolation-level", Choice(("read_uncommitted", "read_committed")),
            "read_uncommitted",
            "Which transactional records share groups deliver: read_committed ones only up to the last "
            "stable offset and never an aborted transaction's. Kafka has it as a group config only; "
            "here the broker's value is the default of the group config of that name.",
            "share_group:isolation_level", group="share.isolation.level"),
    Setting("share.renew.acknowledge.enable", "share-renew-acknowledge-enable", Bool(), True,
            "Whether share-group members may RENEW (KIP-1222) the locks of records they hold; when false "
            "a RENEW acknowledgement is refused with INVALID_RECORD_STATE. Kafka has it as a group config "
            "only; here the broker's value is the default of the group config of that name.",
            "share_group:renew_acknowledge_enable", group="share.renew.acknowledge.enable"),
    Setting("share.coordinator.state.topic.num.partitions", "share-coordinator-state-topic-partitions", Int(1), 50,
            "Partitions of __share_group_state (the share-partitions' states) when it is first created.",
            "share_group:state_topic_partitions"),
    Setting("share.coordinator.state.topic.replication.factor", "share-coordinator-state-topic-replication-factor",
            Int(1), 3, "Replication factor of __share_group_state (capped by the live brokers when created).",
            "share_group:state_topic_replication_factor"),
    Setting("share.coordinator.state.topic.min.isr", "share-coordinator-state-topic-min-isr", Int(1), 2,
            "min.insync.replicas of __share_group_state (capped by its replication factor when created).",
            "share_group:state_topic_min_isr"),
    Setting("share.coordinator.state.topic.segment.bytes", "share-coordinator-state-topic-segment-bytes", Int(1),
            100 * MIB, "segment.bytes of __share_group_state when it is first created.",
            "share_group:state_topic_segment_bytes"),
)
