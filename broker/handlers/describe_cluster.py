"""DescribeCluster v0-v2: the live brokers and the controller (this broker when it is alone).

v2's include_fenced_brokers (KIP-1073) asks for KRaft's fenced brokers too; a broker here is
registered under a live etcd lease or not listed at all, so none is ever fenced."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.net import advertised_brokers
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested

UNKNOWN_OPERATIONS = -(2**31)
BROKERS_ENDPOINT = 1


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    broker_cls = nested(cls, "DescribeClusterBroker")
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE):  # ACLs, as Kafka's handleDescribeCluster
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    error_message="Cluster authorization failed.", endpoint_type=getattr(request, "endpoint_type", BROKERS_ENDPOINT),
                    cluster_id=ctx.view.cluster_id, controller_id=-1, brokers=(),
                    cluster_authorized_operations=UNKNOWN_OPERATIONS)
    if getattr(request, "endpoint_type", BROKERS_ENDPOINT) != BROKERS_ENDPOINT:
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.unsupported_endpoint_type,
                    error_message="only the brokers endpoint is served", endpoint_type=request.endpoint_type,
                    cluster_id=ctx.view.cluster_id, controller_id=-1, brokers=(),
                    cluster_authorized_operations=UNKNOWN_OPERATIONS)
    brokers = tuple(make(broker_cls, broker_id=b.node_id, host=b.host, port=b.port, rack=None, is_fenced=False)
                    for b in advertised_brokers.brokers(ctx.view))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                endpoint_type=BROKERS_ENDPOINT, cluster_id=ctx.view.cluster_id, controller_id=ctx.view.controller_id,
                brokers=brokers, cluster_authorized_operations=UNKNOWN_OPERATIONS)
