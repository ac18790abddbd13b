"""A group's own configs (Kafka's GroupConfig, resource type GROUP in DescribeConfigs and
IncrementalAlterConfigs): the share.* ones of KIP-932 that the share-partitions read.

Each group config is the group-level form of a broker setting (table.py: the row's `group`), whose
value is its default. A group keeps its overrides as the text it was given (group_config_store.py:
group_configs.json on one broker, etcd on a cluster); they are checked as Kafka checks them:

- a name GroupConfig does not know, or one twinlog does not apply (the consumer.* and streams.*
  ones), is INVALID_CONFIG "Unknown group config name";
- a value is parsed by its setting's kind, then held to the broker's bounds:
  share.record.lock.duration.ms within group.share.{min,max}.record.lock.duration.ms,
  share.delivery.count.limit within group.share.{min,max}.delivery.count.limit,
  share.session.timeout.ms within group.share.{min,max}.session.timeout.ms and
  share.heartbeat.interval.ms within group.share.{min,max}.heartbeat.interval.ms, refused with
  Kafka's messages; and the session timeout, the group's or the broker's, must exceed the
  heartbeat interval, the group's or the broker's, as Kafka checks the two together.

share.auto.offset.reset takes latest, earliest or Kafka's by_duration:<ISO-8601 duration>
(share_offset_reset.py).
"""

from __future__ import annotations

from typing import NamedTuple

from wire.error_codes import ErrorCode
from broker.settings.share_group_options import ShareSettings
from broker.settings.table import GROUP_CONFIGS
from broker.settings.topic_config_changes import ConfigChangeError, ConfigOp, apply_ops


class GroupShareConfig(NamedTuple):
    """What one share group's share-partitions run with: its overrides over the broker's values."""
    lock_ms: int
    delivery_limit: int
    max_in_flight: int
    auto_offset_reset: str
    isolation_level: str
    session_timeout_ms: int  # the member's session timer (share_coordinator.py)
    heartbeat_interval_ms: int  # told to members in ShareGroupHeartbeat answers
    renew_acknowledge_enable: bool  # false: RENEW acknowledgements are INVALID_RECORD_STATE


_FIELD = {name: s.target.partition(":")[2] for name, s in GROUP_CONFIGS.items()}  # config -> ShareSettings field
_BOUNDS = {"share.record.lock.duration.ms": ("min_lock_ms", "max_lock_ms", "record.lock.duration.ms"),
           "share.delivery.count.limit": ("min_delivery_limit", "max_delivery_limit", "delivery.count.limit"),
           "share.session.timeout.ms": ("min_session_timeout_ms", "max_session_timeout_ms", "session.timeout.ms"),
           "share.heartbeat.interval.ms": ("min_heartbeat_interval_ms", "max_heartbeat_interval_ms",
                                           "heartbeat.interval.ms")}


def share_config_for(share: ShareSettings, overrides: dict[str, str]) -> GroupShareConfig:
    """The values a group with these (checked) overrides runs with."""
    values = {field: getattr(share, field) for field in GroupShareConfig._fields}
    for name, text in overrides.items():
        values[_FIELD[name]] = GROUP_CONFIGS[name].kind.parse_topic(text)
    return GroupShareConfig(**values)


def validate_group_configs(configs: dict[str, str | None], share: ShareSettings) -> dict[str, str]:
    """A group's overrides, checked; raises ConfigChangeError (INVALID_CONFIG)."""
    for name, value in configs.items():
        setting = GROUP_CONFIGS.get(name)
        if setting is None:
            raise ConfigChangeError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
        if value is None:
            raise ConfigChangeError(ErrorCode.invalid_config, f"Null value not supported for group config: {name}")
        try:
            parsed = setting.kind.parse_topic(value)
        except ValueError as exc:
            raise ConfigChangeError(ErrorCode.invalid_config, f"Invalid value {value} for configuration {name}: {exc}") from None
        if name in _BOUNDS:
            low, high, suffix = _BOUNDS[name]
            if parsed < getattr(share, low):
                raise ConfigChangeError(ErrorCode.invalid_config, f"{name} must be greater than or equal to "
                                                          f"group.share.min.{suffix}")
            if parsed > getattr(share, high):
                raise ConfigChangeError(ErrorCode.invalid_config, f"{name} must be less than or equal to "
                                                          f"group.share.max.{suffix}")
    resolved = share_config_for(share, configs)
    if resolved.session_timeout_ms <= resolved.heartbeat_interval_ms:
        raise ConfigChangeError(ErrorCode.invalid_config, "share.session.timeout.ms must be greater than "
                                                  "share.heartbeat.interval.ms")
    return dict(configs)


def incremental_group(current: dict[str, str], ops: list[ConfigOp], share: ShareSettings) -> dict[str, str]:
    """IncrementalAlterConfigs of a group: its overrides after `ops`; raises ConfigChangeError."""
    return validate_group_configs(apply_ops(current, {}, ops, GROUP_CONFIGS, "group"), share)
