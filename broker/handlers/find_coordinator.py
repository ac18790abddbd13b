"""FindCoordinator: this broker coordinates every group while it is the only broker.

v0-v3 ask for one key, v4+ for a batch. Transactions are not served, so a transaction
coordinator lookup gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the same non-retriable answer
Produce gives a transactional batch (a retriable error would leave clients looping).
"""

from __future__ import annotations

from wire.protocol import response_for

from .response_builder import NO_THROTTLE, error, make, nested

GROUP_KEY_TYPE = 0


def _answer(broker, key_type: int) -> tuple[str, str | None, int, str, int]:
    """(error, message, node id, host, port)"""
    if key_type != GROUP_KEY_TYPE:
        if key_type == 1:
            return "transactional_id_authorization_failed", "transactions are not supported", -1, "", -1
        return "invalid_request", f"unknown coordinator key type {key_type}", -1, "", -1
    broker.offsets_store.ensure_topic()
    return "none", None, broker.config.node_id, broker.config.advertised, broker.config.port


async def handle(broker, header, request):
    cls = response_for(header)
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    if header.api_version >= 4:
        coordinator_cls = nested(cls, "Coordinator")
        coordinators = []
        for key in request.coordinator_keys:
            code, message, node, host, port = _answer(broker, key_type)
            coordinators.append(make(coordinator_cls, key=key, node_id=node, host=host, port=port,
                                     error_code=error(code), error_message=message))
        return make(cls, throttle_time=NO_THROTTLE, coordinators=tuple(coordinators))
    code, message, node, host, port = _answer(broker, key_type)
    return make(cls, throttle_time=NO_THROTTLE, error_code=error(code), error_message=message,
                node_id=node, host=host, port=port)
