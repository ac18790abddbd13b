"""IncrementalAlterConfigs v0-v1: SET / DELETE / APPEND / SUBTRACT per config of a topic
(topic_config_changes.py), a group (group_configs.py) or a broker (dynamic_broker_configs.py),
each resource all or nothing, validate_only changing nothing (config_alteration.py checks and
applies each resource)."""

from __future__ import annotations

from wire.protocol import RequestHeader
from wire.config_codes import ConfigResourceType

from broker.api.context import Answer, ApiContext, Request
from broker.handlers.config_alteration import answer
from broker.settings.dynamic_broker_configs import incremental_broker
from broker.settings.group_configs import incremental_group
from broker.settings.topic_config_changes import ConfigOp, incremental


def _change(broker, res):
    ops = [ConfigOp(c.name, c.config_operation, c.value) for c in res.configs]
    if res.resource_type == ConfigResourceType.GROUP:
        return lambda current, _d, _m: incremental_group(current, ops, broker.config.share_groups)
    if res.resource_type == ConfigResourceType.BROKER:
        return lambda current, _d, _m: incremental_broker(current, ops, per_broker=bool(res.resource_name))
    return lambda current, defaults, mode: incremental(current, defaults, ops, mode)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    broker = ctx.broker  # until this handler is moved onto ctx's typed services
    return await answer(broker, header, request, _change)
