"""ApiVersions: the table of what we serve, straight from wire.protocol.SERVED_VERSIONS."""

from __future__ import annotations

from wire.protocol import SERVED_VERSIONS, response_for

from broker.handlers.response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    api_version = nested(cls, "ApiVersion")
    keys = tuple(
        api_version(api_key=key, min_version=lo, max_version=hi) for key, (lo, hi) in sorted(SERVED_VERSIONS.items())
    )
    return make(cls, error_code=error("none"), api_keys=keys, throttle_time=NO_THROTTLE)
