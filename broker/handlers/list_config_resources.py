"""ListConfigResources v0-v1 (Kafka 4.1; v0 was ListClientMetricsResources): the resources
that have configs, by type.

v0 asks for client-metrics resources only; v1 names the types it wants, none meaning every
type the broker supports. Kafka's v1 types are TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS
and GROUP; a type outside them is UNSUPPORTED_VERSION (as Kafka answers). Here every topic and
this cluster's brokers are listed (DescribeConfigs describes them), and every group that sets a
group config; this broker keeps no logger or client-metrics configs, so those types are
answered with no resources.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.config_codes import ConfigResourceType
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = (
    ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.CLIENT_METRICS, ConfigResourceType.GROUP)
SUPPORTED = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    resource_cls = nested(cls, "ConfigResource")
    supported = SUPPORTED[header.api_version]
    wanted = tuple(getattr(request, "resource_types", ())) or supported
    if any(t not in supported for t in wanted):
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.unsupported_version,
                    config_resources=())
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE_CONFIGS):  # ACLs, as Kafka's handleListConfigResources
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    config_resources=())
    found = []
    if BROKER in wanted:
        found += [(str(b.node_id), BROKER) for b in ctx.view.brokers()]
    if TOPIC in wanted:
        found += [(name, TOPIC) for name in sorted(ctx.topics.topics)]
    if GROUP in wanted:
        found += [(name, GROUP) for name in ctx.configs.configured_groups()]
    resources = tuple(make(resource_cls, resource_name=name, resource_type=kind) for name, kind in found)
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, config_resources=resources)
