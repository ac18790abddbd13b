"""The group.streams.* settings of KIP-1071 streams groups (declared in the settings table,
table.py), checked together as Kafka's GroupCoordinatorConfig checks them at start-up: the
heartbeat interval shorter than the session timeout, and the standby count within its max.
"""

from __future__ import annotations

from dataclasses import dataclass

import click


@dataclass(frozen=True)
class StreamsGroupSettings:
    heartbeat_interval_ms: int  # group.streams.heartbeat.interval.ms
    session_timeout_ms: int  # group.streams.session.timeout.ms
    num_standby_replicas: int  # group.streams.num.standby.replicas: standbys per stateful task


def streams_group_settings(options: dict) -> StreamsGroupSettings:
    """From the settings' values by target key; raises click.UsageError for values Kafka refuses."""
    if options["heartbeat_interval_ms"] >= options["session_timeout_ms"]:
        raise click.UsageError("--group-streams-heartbeat-interval-ms must be less than "
                               "--group-streams-session-timeout-ms")
    if options["num_standby_replicas"] > options["max_standby_replicas"]:
        raise click.UsageError(f"--group-streams-num-standby-replicas {options['num_standby_replicas']} is more "
                               f"than --group-streams-max-standby-replicas {options['max_standby_replicas']}")
    return StreamsGroupSettings(options["heartbeat_interval_ms"], options["session_timeout_ms"],
                                options["num_standby_replicas"])
