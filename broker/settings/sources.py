"""Where each setting's value comes from: flag > environment > config file > default.

- flag: serve's option on the command line (`--segment-bytes 1048576`);
- environment: TWINLOG_<NAME> with the Kafka name's dots as underscores
  (TWINLOG_LOG_SEGMENT_BYTES=1048576);
- file: `--config FILE`, a Kafka server.properties (Java properties syntax, Kafka's keys:
  `log.segment.bytes=1048576`). A key the table does not know is skipped with one warning line,
  as Kafka logs "supplied but isn't a known config", so a stock server.properties loads;
  Kafka's per-listener `listener.name.NAME.ssl.client.auth` keys are read as items of
  listener.ssl.client.auth; a setting kept in milliseconds may come in Kafka's coarser keys
  (`Setting.coarser`: log.retention.hours), the finest one given winning, as in KafkaConfig,
  and a negative product meaning -1 (logRetentionTimeMillis);
- default: the table's (table.py).

Every value, wherever it came from, goes through its setting's parser; a bad one is a
SettingError whose message names the key and where the value came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from broker.settings.kinds import Int
from broker.settings.setting import Setting
from broker.settings.table import BROKER_SETTINGS, BY_KEY

_LISTENER_CLIENT_AUTH = re.compile(r"listener\.name\.([^.]+)\.ssl\.client\.auth")
_COUNT = Int()  # a coarser key's value: Kafka's INT, any sign
# coarser key -> (its setting, ms a unit, rank: 0 the finest)
_COARSER = {key: (s, unit, rank) for s in BROKER_SETTINGS for rank, (key, unit) in enumerate(s.coarser)}

FLAG, ENV, FILE, DEFAULT = "flag", "env", "file", "default"


class SettingError(ValueError):
    """A value a setting's parser refused, or a config file that cannot be read."""


@dataclass(frozen=True)
class Resolved:
    setting: Setting
    value: object
    source: str  # FLAG, ENV, FILE or DEFAULT
    origin: str  # the flag, variable or file the value came from ("" for a default)


@dataclass(frozen=True)
class ConfigFile:
    path: Path
    values: dict[str, str]  # setting name -> text
    unknown: tuple[str, ...]  # keys no setting has, in file order


def read_config_file(path: Path) -> ConfigFile:
    import javaproperties  # only when a file is given: `twinlog --help` stays quick

    try:
        with open(path, encoding="utf-8") as f:
            pairs = [(e.key, e.value) for e in javaproperties.parse(f) if isinstance(e, javaproperties.KeyValue)]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SettingError(f"cannot read config file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    values: dict[str, str] = {}
    client_auth: list[str] = []
    unknown: list[str] = []
    coarse: dict[str, tuple[int, str, str]] = {}  # setting name -> (rank, key, text) of the finest
    for key, text in pairs:
        key = key.strip()
        per_listener = _LISTENER_CLIENT_AUTH.fullmatch(key)
        if per_listener:
            client_auth.append(f"{per_listener.group(1)}={text.strip()}")
        elif key in BY_KEY:
            values[BY_KEY[key].name] = text
        elif key in _COARSER:
            setting, _unit, rank = _COARSER[key]
            if setting.name not in coarse or rank < coarse[setting.name][0]:
                coarse[setting.name] = (rank, key, text)
        else:
            unknown.append(key)
    for name, (_rank, key, text) in coarse.items():
        if name not in values:
            values[name] = _in_ms(key, text, path)
    if client_auth:
        values["listener.ssl.client.auth"] = ";".join(client_auth)
    return ConfigFile(path, values, tuple(unknown))


def _in_ms(key: str, text: str, path: Path) -> str:
    """A coarser key's value as its setting's milliseconds (a negative one: -1)."""
    setting, unit, _rank = _COARSER[key]
    try:
        ms = max(-1, _COUNT.parse(text) * unit)
        setting.kind.parse(str(ms))
    except ValueError as exc:
        raise SettingError(f"invalid value for {key} (from {path}): {exc}") from None
    return str(ms)


def resolve(flags: Mapping[str, object], env: Mapping[str, str], file: ConfigFile | None,
            settings: tuple[Setting, ...] = BROKER_SETTINGS) -> dict[str, Resolved]:
    """Each setting's value and source. `flags`: click parameter name -> value, holding only
    the options given on the command line. Raises SettingError for the first bad value."""
    out: dict[str, Resolved] = {}
    for setting in settings:
        if setting.param_name in flags:
            raw, source, origin = flags[setting.param_name], FLAG, "--" + setting.flag
        elif setting.env_name in env:
            raw, source, origin = env[setting.env_name], ENV, setting.env_name
        elif file is not None and setting.name in file.values:
            raw, source, origin = file.values[setting.name], FILE, str(file.path)
        else:
            out[setting.name] = Resolved(setting, setting.default, DEFAULT, "")
            continue
        try:
            value = setting.kind.parse(raw)
        except ValueError as exc:
            raise SettingError(f"invalid value for {setting.name} (from {origin}): {exc}") from None
        out[setting.name] = Resolved(setting, value, source, origin)
    return out
