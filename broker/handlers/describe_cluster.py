"""DescribeCluster v0-v1: this broker is the whole cluster and its controller."""

from __future__ import annotations

from wire.protocol import response_for

from .response_builder import NO_THROTTLE, error, make, nested

UNKNOWN_OPERATIONS = -(2**31)
BROKERS_ENDPOINT = 1


async def handle(broker, header, request):
    cls = response_for(header)
    broker_cls = nested(cls, "DescribeClusterBroker")
    node = broker.config.node_id
    if getattr(request, "endpoint_type", BROKERS_ENDPOINT) != BROKERS_ENDPOINT:
        return make(cls, throttle_time=NO_THROTTLE, error_code=error("unsupported_endpoint_type"),
                    error_message="only the brokers endpoint is served", endpoint_type=request.endpoint_type,
                    cluster_id=broker.cluster_id, controller_id=-1, brokers=(),
                    cluster_authorized_operations=UNKNOWN_OPERATIONS)
    brokers = (make(broker_cls, broker_id=node, host=broker.config.advertised, port=broker.config.port, rack=None),)
    return make(cls, throttle_time=NO_THROTTLE, error_code=error("none"), error_message=None,
                endpoint_type=BROKERS_ENDPOINT, cluster_id=broker.cluster_id, controller_id=node,
                brokers=brokers, cluster_authorized_operations=UNKNOWN_OPERATIONS)
