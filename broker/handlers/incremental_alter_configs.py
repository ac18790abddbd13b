"""IncrementalAlterConfigs v0-v1: SET / DELETE / APPEND / SUBTRACT per config
(topic_config_changes.py), each resource all or nothing, validate_only changing nothing
(config_alteration.py checks and applies each resource)."""

from __future__ import annotations

from broker.handlers.config_alteration import answer
from broker.settings.topic_config_changes import ConfigOp, incremental


def _change(res):
    ops = [ConfigOp(c.name, c.config_operation, c.value) for c in res.configs]
    return [o.name for o in ops], lambda current, defaults, mode: incremental(current, defaults, ops, mode)


async def handle(broker, header, request):
    return await answer(broker, header, request, _change)
