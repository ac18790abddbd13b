"""Resolved settings -> the BrokerConfig the broker runs with.

Each setting's `target` (settings.py) says where its value goes; the listener, SASL, TLS and
authorizer settings go through their own checks (security_config, authorizer_settings), which
refuse combinations Kafka would refuse at start-up with click.UsageError.
"""

from __future__ import annotations

from dataclasses import replace

from segment.log import LogConfig

from broker.settings.acl_options import authorizer_settings
from broker.settings.security_options import security_config
from broker.settings.config import BrokerConfig
from broker.settings.sources import Resolved


def broker_config(resolved: dict[str, Resolved]) -> tuple[BrokerConfig, dict[str, object]]:
    """The BrokerConfig, and the CLI's own values (log_level) by name."""
    groups: dict[str, dict[str, object]] = {"broker": {}, "log": {}, "security": {}, "acl": {}, "process": {}}
    for r in resolved.values():
        group, _, key = r.setting.target.partition(":")
        groups[group][key] = r.value
    authorizer = authorizer_settings(groups["acl"])
    security = security_config(**groups["security"], advertised_host=groups["broker"]["advertised_host"])
    config = BrokerConfig(
        **groups["broker"], log_defaults=replace(LogConfig(), **groups["log"]), security=security,
        authorizer=authorizer, settings={name: (r.value, r.source) for name, r in resolved.items()})
    return config, groups["process"]
