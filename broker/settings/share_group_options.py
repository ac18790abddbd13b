"""The group.share.* and share.coordinator.* settings of share groups (KIP-932), declared in the settings table (table.py)
and gathered here, checked together as Kafka's ShareGroupConfig checks them at start-up: the
heartbeat interval shorter than the session timeout, and each group-config bound's minimum at
most its maximum. The broker's own values are not held to those bounds (Kafka's are: 15 s at
least for the lock), so a test broker may run with short locks.
"""

from __future__ import annotations

from dataclasses import dataclass

import click


@dataclass(frozen=True)
class ShareSettings:
    lock_ms: int  # group.share.record.lock.duration.ms
    min_lock_ms: int  # group.share.min.record.lock.duration.ms: a group's own lower bound
    max_lock_ms: int  # group.share.max.record.lock.duration.ms
    delivery_limit: int  # group.share.delivery.count.limit
    min_delivery_limit: int  # group.share.min.delivery.count.limit
    max_delivery_limit: int  # group.share.max.delivery.count.limit
    max_in_flight: int  # group.share.partition.max.record.locks
    auto_offset_reset: str  # share.auto.offset.reset: latest, earliest or by_duration:<ISO-8601>
    isolation_level: str  # share.isolation.level: read_uncommitted or read_committed
    renew_acknowledge_enable: bool  # share.renew.acknowledge.enable: RENEW acknowledgements allowed
    session_timeout_ms: int  # group.share.session.timeout.ms
    min_session_timeout_ms: int  # group.share.min.session.timeout.ms: a group's own lower bound
    max_session_timeout_ms: int  # group.share.max.session.timeout.ms
    heartbeat_interval_ms: int  # group.share.heartbeat.interval.ms
    min_heartbeat_interval_ms: int  # group.share.min.heartbeat.interval.ms
    max_heartbeat_interval_ms: int  # group.share.max.heartbeat.interval.ms
    state_topic_partitions: int  # share.coordinator.state.topic.num.partitions
    state_topic_replication_factor: int  # capped by the live brokers, as Kafka does
    state_topic_min_isr: int  # share.coordinator.state.topic.min.isr
    state_topic_segment_bytes: int  # share.coordinator.state.topic.segment.bytes


def share_group_settings(options: dict) -> ShareSettings:
    """From the settings' values by target key; raises click.UsageError for values Kafka refuses."""
    for low, high, name in (("min_lock_ms", "max_lock_ms", "record-lock-duration-ms"),
                            ("min_delivery_limit", "max_delivery_limit", "delivery-count-limit"),
                            ("min_session_timeout_ms", "max_session_timeout_ms", "session-timeout-ms"),
                            ("min_heartbeat_interval_ms", "max_heartbeat_interval_ms", "heartbeat-interval-ms")):
        if options[low] > options[high]:
            raise click.UsageError(f"--group-share-min-{name} must not be more than --group-share-max-{name}")
    if options["heartbeat_interval_ms"] >= options["session_timeout_ms"]:
        raise click.UsageError("--group-share-heartbeat-interval-ms must be less than "
                               "--group-share-session-timeout-ms")
    return ShareSettings(**options)
