"""The group.consumer.* settings of KIP-848 consumer groups, checked together (declared in the
settings table, table.py), as Kafka's GroupCoordinatorConfig checks them at start-up: each of
the heartbeat interval and the session timeout within its min and max, and the interval
shorter than the session (a member must get a heartbeat in before its session runs out).
"""

from __future__ import annotations

from dataclasses import dataclass

import click


@dataclass(frozen=True)
class ConsumerGroupSettings:
    heartbeat_interval_ms: int  # group.consumer.heartbeat.interval.ms
    session_timeout_ms: int  # group.consumer.session.timeout.ms
    assignors: tuple[str, ...]  # group.consumer.assignors; the first is the default
    migration_policy: str  # group.consumer.migration.policy (groups/consumer/migration.py)


def consumer_group_settings(options: dict) -> ConsumerGroupSettings:
    """From the settings' values by target key; raises click.UsageError for values Kafka refuses."""
    for name in ("heartbeat_interval_ms", "session_timeout_ms"):
        value, lo, hi = options[name], options[f"min_{name}"], options[f"max_{name}"]
        flag = "--group-consumer-" + name.replace("_", "-")
        if not lo <= value <= hi:
            raise click.UsageError(f"{flag} {value} is not within its min {lo} and max {hi}")
    if options["heartbeat_interval_ms"] >= options["session_timeout_ms"]:
        raise click.UsageError("--group-consumer-heartbeat-interval-ms must be less than "
                               "--group-consumer-session-timeout-ms")
    assignors = tuple(dict.fromkeys(options["assignors"].split(",")))
    return ConsumerGroupSettings(options["heartbeat_interval_ms"], options["session_timeout_ms"], assignors,
                                 options["migration_policy"])
