"""Resolved settings -> the BrokerConfig the broker runs with.

Each setting's `target` (table.py) says where its value goes; the listener, SASL, TLS and
authorizer settings go through their own checks (security_config, authorizer_settings), which
refuse combinations Kafka would refuse at start-up with click.UsageError. The LogConfig of
topic defaults takes the broker's log.* settings and, for the topic configs with no broker
setting, the table's defaults.
"""

from __future__ import annotations

from segment.log import LogConfig

from broker.settings.acl_options import authorizer_settings
from broker.settings.config import BrokerConfig
from broker.settings.consumer_group_options import consumer_group_settings
from broker.settings.delegation_token_options import delegation_token_settings
from broker.settings.security_options import security_config
from broker.settings.share_group_options import share_group_settings
from broker.settings.streams_group_options import streams_group_settings
from broker.settings.sources import Resolved, resolve
from broker.settings.setting import TOPIC
from broker.settings.table import SETTINGS


def broker_config(resolved: dict[str, Resolved]) -> tuple[BrokerConfig, dict[str, object]]:
    """The BrokerConfig, and the CLI's own values (log_level) by name."""
    groups: dict[str, dict[str, object]] = {"broker": {}, "log": {}, "security": {}, "acl": {}, "consumer_group": {},
                                          "share_group": {}, "token": {}, "streams_group": {},
                                          "process": {}}
    for r in resolved.values():
        group, _, key = r.setting.target.partition(":")
        groups[group][key] = r.value
    for setting in SETTINGS:
        group, _, key = (setting.target or "").partition(":")
        if setting.scope == TOPIC and group == "log":
            groups["log"][key] = setting.default
    authorizer = authorizer_settings(groups["acl"])
    broker = groups["broker"]
    security = security_config(**groups["security"], advertised_host=broker["advertised_host"],
                               default_listener=f"PLAINTEXT://{broker['host']}:{broker['port']}")
    config = BrokerConfig(
        **groups["broker"], log_defaults=LogConfig(**groups["log"]), security=security,
        authorizer=authorizer, consumer_groups=consumer_group_settings(groups["consumer_group"]),
        share_groups=share_group_settings(groups["share_group"]),
        delegation_tokens=delegation_token_settings(groups["token"]),
        streams_groups=streams_group_settings(groups["streams_group"]), settings={name: (r.value, r.source) for name, r in resolved.items()})
    return config, groups["process"]


def config_with(**options) -> BrokerConfig:
    """The BrokerConfig `twinlog serve` runs with given these options (serve's parameter names:
    data_dir=..., storage_mode=...) and no environment or file: the table's defaults for the
    rest. For tests and embedded brokers; raises SettingError for a bad value."""
    return broker_config(resolve(options, {}, None))[0]
