"""What a topic's configs become after AlterConfigs or IncrementalAlterConfigs, by Kafka's rules.

Pure functions over the topic's stored overrides (`Topic.configs`, what topics.json / etcd
keep): no I/O, so the handlers validate everything first and change a topic only when all
of its operations are valid (Kafka applies a resource's operations all or none).

Kafka's rules (ConfigurationControlManager, ControllerConfigurationValidator):
- IncrementalAlterConfigs: SET puts a value, DELETE drops the override (the default shows
  again), APPEND / SUBTRACT add or remove items of a LIST config (here: cleanup.policy),
  starting from the override or, without one, from the default; APPEND skips items already
  there. APPEND / SUBTRACT on a non-list config, a key named twice, a null value for SET,
  and an unknown key are refused.
- AlterConfigs (the legacy, whole-resource form): the given set replaces every override;
  keys not named go back to their defaults.
- storage.mode is twinlog's own: a topic's files live in the engine it was created in, so it
  keeps its mode (INVALID_CONFIG for any other value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from wire.error_codes import ErrorCode
from wire.config_codes import AlterConfigOp, ConfigType

from broker.settings.table import TOPIC_CONFIGS
from broker.settings.topic_configs import InvalidConfig, validate_topic_configs

SET, DELETE, APPEND, SUBTRACT = AlterConfigOp.SET, AlterConfigOp.DELETE, AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT
_OPS = frozenset(AlterConfigOp)


class ConfigChangeError(Exception):
    """Carries Kafka's error (INVALID_CONFIG, INVALID_REQUEST) for the resource."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ConfigOp:
    name: str
    op: int  # SET / DELETE / APPEND / SUBTRACT
    value: str | None


def _list_items(value: str | None) -> list[str]:
    return [item for item in (value or "").split(",") if item]


def incremental(current: dict[str, str], defaults: Mapping[str, str | None], ops: list[ConfigOp],
                storage_mode: str) -> dict[str, str]:
    """The overrides after `ops`; `defaults` gives each key's value when it has no override,
    `storage_mode` is the topic's layout. Raises ConfigChangeError."""
    return _validated(current, apply_ops(current, defaults, ops, TOPIC_CONFIGS, "topic"), storage_mode)


def apply_ops(current: dict[str, str], defaults: Mapping[str, str | None], ops: list[ConfigOp], known, what: str
              ) -> dict[str, str]:
    """The overrides after `ops`, by the rules above, before the values are checked; `known`:
    the config names of this kind of resource (`what`: topic, group) and their settings."""
    names = [o.name for o in ops]
    if len(set(names)) != len(names):
        duplicated = sorted({n for n in names if names.count(n) > 1})
        raise ConfigChangeError(ErrorCode.invalid_request, f"Error due to duplicate config keys: {duplicated}")
    out = dict(current)
    for o in ops:
        if o.op not in _OPS:
            raise ConfigChangeError(ErrorCode.invalid_request, f"Unknown alter config operation {o.op} for {o.name}")
        if o.name not in known and o.op != SET:  # a SET's name is checked with its value
            raise ConfigChangeError(ErrorCode.invalid_config, f"Unknown {what} config name: {o.name}")
        if o.op == DELETE:
            out.pop(o.name, None)
        elif o.op == SET:
            if o.value is None:
                raise ConfigChangeError(ErrorCode.invalid_config, f"Null value not supported for {what} config: {o.name}")
            out[o.name] = o.value
        else:
            if known[o.name].kind.config_type != ConfigType.LIST:
                raise ConfigChangeError(ErrorCode.invalid_config,
                                        f"Can't {AlterConfigOp(o.op).name} to key {o.name} because its type is not LIST.")
            items = _list_items(out.get(o.name, defaults.get(o.name)))
            for item in _list_items(o.value):
                if o.op == APPEND and item not in items:
                    items.append(item)
                elif o.op == SUBTRACT:
                    items = [i for i in items if i != item]
            out[o.name] = ",".join(items)
    return out


def replace_all(current: dict[str, str], wanted: dict[str, str | None], storage_mode: str) -> dict[str, str]:
    """AlterConfigs: `wanted` becomes the whole set of overrides. Raises ConfigChangeError."""
    for name, value in wanted.items():
        if value is None:
            raise ConfigChangeError(ErrorCode.invalid_config, f"Null value not supported for topic config: {name}")
    return _validated(current, dict(wanted), storage_mode)


def _validated(current: dict[str, str], out: dict[str, str], storage_mode: str) -> dict[str, str]:
    if out.get("storage.mode", storage_mode) != storage_mode:
        raise ConfigChangeError(ErrorCode.invalid_config, f"storage.mode is fixed when a topic is created: this topic's "
                                                  f"files are in the {storage_mode} layout")
    out.pop("storage.mode", None)  # the topic keeps whatever it was created with
    if "storage.mode" in current:
        out["storage.mode"] = current["storage.mode"]
    try:
        return validate_topic_configs(out)
    except InvalidConfig as exc:
        raise ConfigChangeError(ErrorCode.invalid_config, str(exc)) from None
