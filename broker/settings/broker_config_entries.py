"""DescribeConfigs' entries for this broker, from the settings table (settings.py).

A value is read where the broker keeps it (BrokerConfig's fields, the topic defaults), so a
port bound at start (`--port 0`) shows as the real port; settings that are not fields show the
value resolved at start. Sources are Kafka's: STATIC_BROKER_CONFIG for a value from a flag, the
environment or the config file (all three are Kafka's static, server.properties, layer),
DEFAULT_CONFIG for a default. Sensitive values are null with is_sensitive, as Kafka answers.
listeners and advertised.listeners are always STATIC_BROKER_CONFIG: without --listeners they
are the --host/--port the broker was started on, never an unset default.
"""

from __future__ import annotations

from typing import NamedTuple

from wire.config_codes import ConfigSource

from broker.settings.config import BrokerConfig
from broker.settings.table import LONG_MAX, SETTINGS, Setting

STATIC_BROKER_CONFIG, DEFAULT_CONFIG = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG
_DERIVED = {"listeners", "advertised.listeners"}


class BrokerEntry(NamedTuple):
    name: str
    value: str | None
    source: int
    sensitive: bool
    config_type: int


def _value(config: BrokerConfig, setting: Setting):
    group, _, key = setting.target.partition(":")
    if group == "broker":
        return getattr(config, key)
    if group == "log":
        return getattr(config.log_defaults, key)
    return config.settings.get(setting.name, (setting.default, "default"))[0]


def _shown(config: BrokerConfig, setting: Setting, value) -> str | None:
    if setting.name == "listeners":
        return value or f"PLAINTEXT://{config.host}:{config.port}"
    if setting.name == "advertised.listeners":
        return value or config.settings.get("listeners", (None,))[0] or f"PLAINTEXT://{config.advertised}:{config.port}"
    if setting.name == "log.flush.interval.messages" and value == 0:
        return str(LONG_MAX)  # Kafka's "never": our 0
    return None if value is None else setting.kind.show(value)


def _source(config: BrokerConfig, setting: Setting, value) -> int:
    if setting.name in _DERIVED:
        return STATIC_BROKER_CONFIG
    recorded = config.settings.get(setting.name)
    if recorded is not None:
        return DEFAULT_CONFIG if recorded[1] == "default" else STATIC_BROKER_CONFIG
    # A BrokerConfig built without the CLI (tests, embedded brokers): set means not the default
    return DEFAULT_CONFIG if value == setting.default else STATIC_BROKER_CONFIG


def broker_entries(config: BrokerConfig) -> list[BrokerEntry]:
    """One entry per described setting, sorted by name."""
    out = []
    for setting in SETTINGS:
        if not setting.describe:
            continue
        value = _value(config, setting)
        shown = None if setting.sensitive else _shown(config, setting, value)
        out.append(BrokerEntry(setting.name, shown, _source(config, setting, value), setting.sensitive,
                               setting.kind.config_type))
    return sorted(out)
