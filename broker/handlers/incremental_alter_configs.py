"""IncrementalAlterConfigs v0-v1: SET / DELETE / APPEND / SUBTRACT per config of a topic
(topic_config_changes.py), a group (group_configs.py) or a broker (dynamic_broker_configs.py),
each resource all or nothing, validate_only changing nothing (config_alteration.py checks and
applies each resource)."""

from __future__ import annotations

from typing import Any

from wire.protocol import RequestHeader
from wire.config_codes import ConfigResourceType

from broker.api.context import Answer, ApiContext, Request
from broker.handlers.config_alteration import ConfigChange, answer
from broker.settings.config import BrokerConfig
from broker.settings.dynamic_broker_configs import incremental_broker
from broker.settings.group_configs import incremental_group
from broker.settings.topic_config_changes import ConfigOp, incremental


def _change(config: BrokerConfig, res: Any) -> ConfigChange:
    ops = [ConfigOp(c.name, c.config_operation, c.value) for c in res.configs]
    if res.resource_type == ConfigResourceType.GROUP:
        return lambda current, _d, _m: incremental_group(current, ops, config.share_groups)
    if res.resource_type == ConfigResourceType.BROKER:
        return lambda current, _d, _m: incremental_broker(current, ops, per_broker=bool(res.resource_name))
    return lambda current, defaults, mode: incremental(current, defaults, ops, mode)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    return await answer(ctx, header, request, _change)
