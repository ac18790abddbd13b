"""IncrementalAlterConfigs v0-v1: SET / DELETE / APPEND / SUBTRACT per config
(topic_config_changes.py), each resource all or nothing, validate_only changing nothing."""

from __future__ import annotations

from wire.protocol import response_for

from broker.handlers import config_alteration
from broker.security.acl.checks import config_refusal
from broker.security.acl.model import Operation
from broker.settings.topic_config_changes import ConfigOp, incremental
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    result_cls = nested(cls, "AlterConfigsResourceResponse")
    duplicated = config_alteration.duplicated(request.resources)
    results = []
    for res in request.resources:
        ops = [ConfigOp(c.name, c.config_operation, c.value) for c in res.configs]
        refusal = config_refusal(broker, Operation.ALTER_CONFIGS, res.resource_type, res.resource_name)
        if refusal is not None:  # ACLs, as Kafka's AlterConfigs handlers
            results.append(make(result_cls, error_code=error(refusal), error_message="Authorization failed.",
                                resource_type=res.resource_type, resource_name=res.resource_name))
            continue
        code, message = await config_alteration.alter(
            broker, res.resource_type, res.resource_name, [o.name for o in ops],
            lambda current, defaults, mode, ops=ops: incremental(current, defaults, ops, mode),
            request.validate_only, (res.resource_type, res.resource_name) in duplicated)
        results.append(make(result_cls, error_code=error(code), error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name))
    return make(cls, throttle_time=NO_THROTTLE, responses=tuple(results))
