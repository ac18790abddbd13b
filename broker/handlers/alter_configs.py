"""AlterConfigs v0-v2: the legacy, whole-resource form; the given set replaces every override
(config_alteration.py checks and applies each resource)."""

from __future__ import annotations

from typing import Any

from wire.protocol import RequestHeader
from wire.config_codes import ConfigResourceType

from broker.api.context import Answer, ApiContext, Request
from broker.handlers.config_alteration import ConfigChange, answer
from broker.settings.config import BrokerConfig
from broker.settings.dynamic_broker_configs import check_change
from broker.settings.group_configs import validate_group_configs
from broker.settings.topic_config_changes import replace_all


def _change(config: BrokerConfig, res: Any) -> ConfigChange:
    wanted = {c.name: c.value for c in res.configs}
    if res.resource_type == ConfigResourceType.GROUP:
        return lambda _current, _d, _m: validate_group_configs(wanted, config.share_groups)
    if res.resource_type == ConfigResourceType.BROKER:
        return lambda _current, _d, _m: check_change(wanted, per_broker=bool(res.resource_name))
    return lambda current, _defaults, mode: replace_all(current, wanted, mode)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    return await answer(ctx, header, request, _change)
