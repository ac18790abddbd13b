"""DescribeConfigs' entries from the settings table (table.py): this broker's settings, a
topic's configs and a group's, each with Kafka's type, source and synonyms.

Values are read where the broker keeps them (BrokerConfig's fields, its LogConfig of topic
defaults), so a port bound at start (`--port 0`) shows as the real port; settings that are not
fields show the value resolved at start.

Sources and synonyms follow Kafka's ConfigHelper. A dynamic broker config (AlterConfigs of a
BROKER resource: dynamic_broker_configs.py) has a DYNAMIC_BROKER_CONFIG synonym when this
broker's id sets it, then a DYNAMIC_DEFAULT_BROKER_CONFIG one when the cluster default does.
Those are Kafka's runtime configs twinlog only keeps (their documentation says why they change
nothing here: dynamic_no_effect.py), and the topic defaults it applies live
(dynamic_topic_defaults.py LIVE): those that are settings of the table come before their
static synonyms below, and they alone of the table's settings are not read-only. A broker
setting has a STATIC_BROKER_CONFIG synonym when a flag, a TWINLOG_* variable or the config file
set it (all three are Kafka's static, server.properties, layer), then a DEFAULT_CONFIG synonym
with the table's default. A topic config has a DYNAMIC_TOPIC_CONFIG synonym when the topic sets
it, then the synonyms of its broker setting (scope both), dynamic ones included; a topic config
with no broker setting has the dynamic broker config of its Kafka name alone when one is set
(log.cleanup.policy for cleanup.policy), else none. An entry's value and source are its first
synonym's: a topic that does not set min.insync.replicas, on a broker started with
--min-insync-replicas 2, reports 2 from STATIC_BROKER_CONFIG, the value the broker enforces. A
group config is alike: a GROUP_CONFIG synonym when the group sets it, then its broker setting's
synonyms.

Sensitive values are null with is_sensitive, as Kafka answers. listeners and
advertised.listeners are always STATIC_BROKER_CONFIG: without --listeners they are the
--host/--port the broker was started on, never an unset default. A topic's storage.mode is the
layout it was created in, which it keeps.
"""

from __future__ import annotations

from typing import NamedTuple

from wire.config_codes import ConfigSource, ConfigType

from broker.settings.config import BrokerConfig
from broker.settings.dynamic_broker_configs import is_sensitive
from broker.settings.dynamic_no_effect import reason as no_effect_reason
from broker.settings.dynamic_topic_defaults import BROKER_NAME, LIVE
from broker.settings.kinds import Text
from broker.settings.sources import DEFAULT
from broker.settings.setting import BOTH, TOPIC, Setting
from broker.settings.table import BROKER_SETTINGS, GROUP_CONFIGS, TOPIC_CONFIGS

_DERIVED = {"listeners", "advertised.listeners"}


class Synonym(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    config_type: ConfigType
    synonyms: tuple[Synonym, ...]  # Kafka's order: the one in force first
    doc: str


def _value(config: BrokerConfig, setting: Setting):
    group, _, key = (setting.target or "").partition(":")
    if group == "broker":
        return getattr(config, key)
    if group == "log":
        return getattr(config.log_defaults, key)
    if setting.scope == TOPIC:  # kept in the topic's configs only: nothing but the default to read
        return setting.default
    return config.settings[setting.name][0]


def _shown(config: BrokerConfig, setting: Setting) -> str | None:
    if setting.sensitive:
        return None
    value = _value(config, setting)
    if setting.name == "listeners":
        return value or f"PLAINTEXT://{config.host}:{config.port}"
    if setting.name == "advertised.listeners":
        return value or config.settings["listeners"][0] or f"PLAINTEXT://{config.advertised}:{config.port}"
    return setting.kind.described(value)


_DYNAMIC_SOURCES = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def _dynamic_synonyms(setting: Setting, own: dict[str, str], default: dict[str, str]) -> tuple[Synonym, ...]:
    """The dynamic broker configs that set this setting (a broker setting taken live) or its topic
    config's default, under their name."""
    name = setting.name if setting.name in LIVE else BROKER_NAME.get(setting.topic)
    return tuple(Synonym(name, setting.kind.described(setting.kind.parse_topic(layer[name])), source)
                 for layer, source in zip((own, default), _DYNAMIC_SOURCES) if name is not None and name in layer)


def _broker_synonyms(config: BrokerConfig, setting: Setting, own: dict[str, str],
                     default: dict[str, str]) -> tuple[Synonym, ...]:
    out = list(_dynamic_synonyms(setting, own, default))
    if setting.name in _DERIVED or config.settings[setting.name][1] != DEFAULT:
        out.append(Synonym(setting.name, _shown(config, setting), ConfigSource.STATIC_BROKER_CONFIG))
    if setting.default is not None:
        default = None if setting.sensitive else setting.kind.described(setting.default)
        out.append(Synonym(setting.name, default, ConfigSource.DEFAULT_CONFIG))
    return tuple(out)


def _entry(name: str, value: str | None, setting: Setting, synonyms: tuple[Synonym, ...],
           read_only: bool) -> ConfigEntry:
    source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(name, value, source, read_only, setting.sensitive, setting.kind.config_type, synonyms,
                       setting.doc)


def broker_entries(config: BrokerConfig, own: dict[str, str], default: dict[str, str]) -> list[ConfigEntry]:
    """One entry per described broker setting and per dynamic config set, sorted by name: `own`
    the dynamic configs of this broker's id, `default` the cluster default's, which come first
    in the synonyms, as Kafka orders them (dynamic_broker_store.py keeps them)."""
    out = {}
    for s in BROKER_SETTINGS:
        if s.describe:
            synonyms = _broker_synonyms(config, s, own, default)
            out[s.name] = _entry(s.name, _in_force(config, s, synonyms), s, synonyms, read_only=s.name not in LIVE)
    for name in {*own, *default} - out.keys():  # Kafka's configs with no broker setting here
        doc = no_effect_reason(name) or ""  # its documentation says it changes nothing, and why
        setting = Setting(name, name, Text(), None, doc, None, sensitive=is_sensitive(name))
        synonyms = tuple(Synonym(name, None if setting.sensitive else layer[name], source)
                         for layer, source in ((own, ConfigSource.DYNAMIC_BROKER_CONFIG),
                                               (default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)) if name in layer)
        out[name] = _entry(name, synonyms[0].value, setting, synonyms, read_only=False)
    return sorted(out.values())


def _in_force(config: BrokerConfig, setting: Setting, synonyms: tuple[Synonym, ...]) -> str | None:
    """The value a broker setting has: a dynamic config's when one sets it, else the static one."""
    return synonyms[0].value if synonyms and synonyms[0].source in _DYNAMIC_SOURCES else _shown(config, setting)


def default_broker_entries(config: BrokerConfig, default: dict[str, str]) -> list[ConfigEntry]:
    """The cluster default resource (an empty name): its dynamic configs alone, as Kafka answers."""
    return [e for e in broker_entries(config, {}, default) if e.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]


def topic_entries(config: BrokerConfig, own: dict[str, str], default: dict[str, str], storage_mode: str,
                  overrides: dict[str, str]) -> list[ConfigEntry]:
    """Every topic config of a topic in the `storage_mode` layout that sets `overrides`, by name;
    `own` and `default` the dynamic broker configs, as broker_entries takes them."""
    out = []
    for name, setting in TOPIC_CONFIGS.items():
        synonyms = (_broker_synonyms(config, setting, own, default) if setting.scope == BOTH
                    else _dynamic_synonyms(setting, own, default))
        if name in overrides:
            synonyms = (Synonym(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG), *synonyms)
            value = overrides[name]
        elif name == "storage.mode":
            value = storage_mode
        else:
            value = _in_force(config, setting, synonyms)
        out.append(_entry(name, value, setting, synonyms, read_only=False))
    return out


def group_entries(config: BrokerConfig, overrides: dict[str, str]) -> list[ConfigEntry]:
    """Every group config of a group that sets `overrides`, by name."""
    out = []
    for name, setting in GROUP_CONFIGS.items():
        synonyms = _broker_synonyms(config, setting, {}, {})  # no group config's default is dynamic
        value = _shown(config, setting)
        if name in overrides:
            synonyms = (Synonym(name, overrides[name], ConfigSource.GROUP_CONFIG), *synonyms)
            value = overrides[name]
        out.append(_entry(name, value, setting, synonyms, read_only=False))
    return out
