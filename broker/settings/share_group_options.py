"""The group.share.* and share.coordinator.* settings of share groups (KIP-932), declared in the settings table (table.py)
and gathered here, checked together as Kafka's ShareGroupConfig checks them at start-up: the
heartbeat interval shorter than the session timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

import click


@dataclass(frozen=True)
class ShareSettings:
    lock_ms: int  # group.share.record.lock.duration.ms
    delivery_limit: int  # group.share.delivery.count.limit
    max_in_flight: int  # group.share.partition.max.record.locks
    auto_offset_reset: str  # share.auto.offset.reset: latest or earliest
    session_timeout_ms: int  # group.share.session.timeout.ms
    heartbeat_interval_ms: int  # group.share.heartbeat.interval.ms
    state_topic_partitions: int  # share.coordinator.state.topic.num.partitions
    state_topic_replication_factor: int  # capped by the live brokers, as Kafka does
    state_topic_min_isr: int  # share.coordinator.state.topic.min.isr
    state_topic_segment_bytes: int  # share.coordinator.state.topic.segment.bytes


def share_group_settings(options: dict) -> ShareSettings:
    """From the settings' values by target key; raises click.UsageError for values Kafka refuses."""
    if options["heartbeat_interval_ms"] >= options["session_timeout_ms"]:
        raise click.UsageError("--group-share-heartbeat-interval-ms must be less than "
                               "--group-share-session-timeout-ms")
    return ShareSettings(**options)
