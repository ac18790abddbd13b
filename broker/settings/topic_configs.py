"""The topic configs CreateTopics, AlterConfigs and IncrementalAlterConfigs accept, each checked
by its row of the settings table (table.py: TOPIC_CONFIGS), and the LogConfig a topic's
partitions get: the broker's defaults with the topic's overrides on top.

A topic keeps its overrides as the text it was given (topics.json, etcd), so a value is
checked as Kafka checks it, exactly (Kind.parse_topic), and refused with Kafka's
INVALID_CONFIG messages.
"""

from __future__ import annotations

from dataclasses import replace

from segment.log import LogConfig

from broker.settings.table import TOPIC_CONFIGS


class InvalidConfig(ValueError):
    """A topic config name or value Kafka would reject (INVALID_CONFIG)."""


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """The configs given to CreateTopics or left by an alteration, checked; raises InvalidConfig."""
    clean: dict[str, str] = {}
    for name, value in configs.items():
        setting = TOPIC_CONFIGS.get(name)
        if setting is None:
            raise InvalidConfig(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidConfig(f"Null value not supported for topic config {name}")
        try:
            setting.kind.parse_topic(value)
        except ValueError as exc:
            raise InvalidConfig(f"Invalid value {value} for configuration {name}: {exc}") from None
        clean[name] = value
    return clean


def log_config_for(defaults: LogConfig, configs: dict[str, str]) -> LogConfig:
    """The LogConfig of a topic with these (checked) overrides; `defaults` is the broker's."""
    changes = {}
    for name, value in configs.items():
        setting = TOPIC_CONFIGS[name]
        group, _, field_name = (setting.target or "").partition(":")
        if group == "log":
            changes[field_name] = setting.kind.parse_topic(value)
    return replace(defaults, **changes)
