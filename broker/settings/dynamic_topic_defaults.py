"""The broker's topic defaults with the dynamic broker configs on top: the settings of the table
that Kafka lets AlterConfigs change at runtime (DynamicLogConfig's log.* synonyms of topic
configs, and min.insync.replicas) and that twinlog applies live.

Kafka's precedence: this broker's dynamic config (its id) > the cluster default's (an empty
name) > the static value (flag, TWINLOG_* variable, config file) > the table's default. A
topic's own override beats all of them (topic_configs.py log_config_for).

A hosted topic's partitions take a changed default at once (TopicRegistry.set_defaults); one
that sets the config itself keeps its own. log.segment.delete.delay.ms is not here: the
commitlog layout's shared files take it when the store opens, so it stays refused.
"""

from __future__ import annotations

from dataclasses import replace

from segment.log import LogConfig

from broker.settings.config import BrokerConfig
from broker.settings.setting import Setting
from broker.settings.table import BY_NAME
from broker.settings.topic_config_changes import ConfigChangeError

# Kafka's DynamicLogConfig.ReconfigurableConfigs that are settings here with a live target
LIVE: dict[str, Setting] = {name: BY_NAME[name] for name in (
    "log.segment.bytes", "log.retention.ms", "log.retention.bytes", "log.flush.interval.messages",
    "log.flush.interval.ms", "log.index.interval.bytes", "message.max.bytes", "min.insync.replicas",
)}


def in_force(own: dict[str, str], default: dict[str, str]) -> dict[str, str]:
    """The live settings the dynamic layers set, name -> text: `own` (this broker's id) over
    `default` (the cluster default)."""
    return {n: v for n, v in {**default, **own}.items() if n in LIVE}


def check_values(configs: dict[str, str]) -> None:
    """Raises ConfigChangeError for a live setting's value its kind refuses, with Kafka's
    ConfigException message (INVALID_REQUEST, as ConfigAdminManager answers a broker's)."""
    for name, value in configs.items():
        if name in LIVE:
            try:
                LIVE[name].kind.parse_topic(value)
            except ValueError as exc:
                raise ConfigChangeError("invalid_request",
                                        f"Invalid value {value} for configuration {name}: {exc}") from None


def log_defaults(config: BrokerConfig, dynamic: dict[str, str]) -> LogConfig:
    """The LogConfig a topic without overrides gets: the static one with `dynamic` (in_force's)."""
    changes = {}
    for name, value in dynamic.items():
        group, _, field_name = (LIVE[name].target or "").partition(":")
        if group == "log":
            changes[field_name] = LIVE[name].kind.parse_topic(value)
    return replace(config.log_defaults, **changes)


def min_insync_replicas(config: BrokerConfig, dynamic: dict[str, str]) -> int:
    if "min.insync.replicas" in dynamic:
        return LIVE["min.insync.replicas"].kind.parse_topic(dynamic["min.insync.replicas"])
    return config.min_insync_replicas
