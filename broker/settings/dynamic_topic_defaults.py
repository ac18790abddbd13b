"""The broker's topic defaults with the dynamic broker configs on top: the configs Kafka lets
AlterConfigs change at runtime (DynamicLogConfig's log.* synonyms of topic configs, and
min.insync.replicas) that twinlog applies live: its broker settings of them, and the broker
names of topic configs it has no broker setting for (log.cleanup.policy -> cleanup.policy).

Kafka's precedence: this broker's dynamic config (its id) > the cluster default's (an empty
name) > the static value (flag, TWINLOG_* variable, config file) > the table's default. A
topic's own override beats all of them (topic_configs.py log_config_for).

A hosted topic's partitions take a changed default at once (TopicRegistry.set_defaults); one
that sets the config itself keeps its own. unclean.leader.election.enable is the controller's:
it reads the layers from its metadata image (broker/cluster/controller.py unclean_allowed), so
its broker id's value counts there, as on Kafka's controller. transaction.partition.verification.enable
is the produce path's (txn_partition_verification below), read per transactional request.
log.segment.delete.delay.ms is not here: the commitlog layout's shared files take it when the
store opens, so it stays refused.
"""

from __future__ import annotations

from dataclasses import replace

from wire.error_codes import ErrorCode
from segment.log import LogConfig

from broker.settings.config import BrokerConfig
from broker.settings.setting import Setting
from broker.settings.table import BY_NAME, TOPIC_CONFIGS
from broker.settings.topic_config_changes import ConfigChangeError

# Kafka's DynamicLogConfig.ReconfigurableConfigs that are broker settings here with a live target
_BROKER_SETTINGS = ("log.segment.bytes", "log.retention.ms", "log.retention.bytes", "log.flush.interval.messages",
                    "log.flush.interval.ms", "log.index.interval.bytes", "message.max.bytes", "min.insync.replicas",
                    "unclean.leader.election.enable", "transaction.partition.verification.enable")
# ... and those whose topic config has no broker setting here (Kafka's ServerTopicConfigSynonyms):
# the topic config's row checks and places the value
_TOPIC_CONFIGS = {
    "log.roll.ms": "segment.ms", "log.roll.jitter.ms": "segment.jitter.ms", "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms", "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    **{n: n for n in ("compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level")},
}
# the dynamic broker config's name -> the row of the table it sets
LIVE: dict[str, Setting] = {**{n: BY_NAME[n] for n in _BROKER_SETTINGS},
                            **{n: TOPIC_CONFIGS[t] for n, t in _TOPIC_CONFIGS.items()}}
# a topic config -> the dynamic broker config that is its default
BROKER_NAME: dict[str, str] = {s.topic: n for n, s in LIVE.items() if s.topic}


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
                raise ConfigChangeError(ErrorCode.invalid_request,
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


def txn_partition_verification(config: BrokerConfig, dynamic: dict[str, str]) -> bool:
    if "transaction.partition.verification.enable" in dynamic:
        return LIVE["transaction.partition.verification.enable"].kind.parse_topic(
            dynamic["transaction.partition.verification.enable"])
    return config.txn_partition_verification
