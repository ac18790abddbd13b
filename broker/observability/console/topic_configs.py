"""A topic's configs, shown and changed through the broker's own DescribeConfigs and
IncrementalAlterConfigs handlers, so the console validates, refuses and applies exactly as a
Kafka client's request would be (the same error codes and messages, the same ACL checks, the
same path to topics.json or, in a cluster, to etcd).

The handlers read who asks from the request context: a console session acts as the SASL user
who logged in (`principal`), from the browser's address; with no SASL users configured the
console has no login and acts as the broker itself, as before.
"""

from __future__ import annotations

from typing import Any

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (AlterableConfig, AlterConfigsResource,
                                                              IncrementalAlterConfigsRequest)
from kio.static.primitive import i8
from wire.config_codes import ConfigResourceType, ConfigSource
from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader

from broker.api.context import ApiContext
from broker.handlers import describe_configs, incremental_alter_configs
from broker.net.listeners import Listener
from broker.net.request_context import RequestContext, current_request
from broker.observability.console.broker_state import RequestRefused

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44
# IncrementalAlterConfigs' operations, as the page names them
OPERATIONS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}
MAX_CHANGES = 100  # configs changed by one request from the page


def console_context(principal: str, peer: str, host: str, port: int) -> RequestContext:
    """The request context a logged-in console session's requests carry."""
    listener = Listener("CONSOLE", host, port, "SASL_PLAINTEXT", host, port)
    return RequestContext(listener, peer, principal=principal)


async def describe(api: ApiContext, topic: str, context: RequestContext | None) -> dict[str, Any]:
    """{topic, configs: [{name, value, source, read_only, sensitive}]}, or RequestRefused with
    the handler's error."""
    if context is not None:
        current_request.set(context)  # this coroutine runs as its own task: the setting stays here
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=i8(ConfigResourceType.TOPIC), resource_name=topic, configuration_keys=None),),
        include_synonyms=False, include_documentation=True)
    response = await describe_configs.handle(api, RequestHeader(DESCRIBE_CONFIGS, 4, 0, "console", True), request)
    (result,) = response.results
    _refuse_on_error(result.error_code, result.error_message)
    return {"topic": topic, "configs": [
        {"name": c.name, "value": c.value, "source": _source(c.config_source),
         "read_only": c.read_only, "sensitive": c.is_sensitive, "doc": c.documentation}
        for c in sorted(result.configs, key=lambda c: c.name)]}


def parse_changes(body: object) -> list[tuple[str, int, str | None]]:
    """The page's {"changes": [{"name", "op", "value"}]} as (name, operation, value);
    RequestRefused(400) when the shape is wrong (the values are the handler's to judge)."""
    changes = body.get("changes") if isinstance(body, dict) else None
    if not isinstance(changes, list) or not 1 <= len(changes) <= MAX_CHANGES:
        raise RequestRefused(400, f'give {{"changes": [{{"name": ..., "op": "set", "value": ...}}]}} '
                                  f"(1 to {MAX_CHANGES})")
    out = []
    for change in changes:
        if not isinstance(change, dict) or not isinstance(change.get("name"), str) \
                or change.get("op", "set") not in OPERATIONS \
                or not isinstance(change.get("value"), (str, type(None))):
            raise RequestRefused(400, f"a change is {{name: string, op: {'|'.join(OPERATIONS)}, "
                                      f"value: string or null}}, not {change!r}"[:300])
        out.append((change["name"], OPERATIONS[change.get("op", "set")], change.get("value")))
    return out


async def alter(api: ApiContext, topic: str, changes: list[tuple[str, int, str | None]],
                context: RequestContext | None) -> dict[str, Any]:
    """Applies the changes (all or nothing, as IncrementalAlterConfigs does); RequestRefused
    with Kafka's error name and message when the handler refuses them."""
    if context is not None:
        current_request.set(context)
    request = IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=i8(ConfigResourceType.TOPIC), resource_name=topic,
        configs=tuple(AlterableConfig(name=name, config_operation=i8(op), value=value)
                      for name, op, value in changes)),), validate_only=False)
    header = RequestHeader(INCREMENTAL_ALTER_CONFIGS, 1, 0, "console", True)
    response = await incremental_alter_configs.handle(api, header, request)
    (result,) = response.responses
    _refuse_on_error(result.error_code, result.error_message)
    return {"topic": topic, "changed": [name for name, _, _ in changes]}


def _source(code: int) -> str:
    try:
        return ConfigSource(code).name
    except ValueError:
        return str(code)


_STATUS = {ErrorCode.unknown_topic_or_partition: 404, ErrorCode.topic_authorization_failed: 403,
           ErrorCode.cluster_authorization_failed: 403}


def _refuse_on_error(code_value: int, message: str | None) -> None:
    code = ErrorCode(code_value)
    if code is not ErrorCode.none:
        raise RequestRefused(_STATUS.get(code, 400), f"{code.name.upper()}: {message or code.name}")
