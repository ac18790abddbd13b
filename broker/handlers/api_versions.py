"""ApiVersions: the table of what we serve, straight from wire.protocol.SERVED_VERSIONS, and from
v3 the features (broker/features.py, ctx.features), in tagged fields.

As Kafka's ApiVersionsResponse: v3 leaves out a supported feature whose minimum version is 0
(v3 clients refuse a range starting at 0; KIP-1140 made v4 list them), and a finalized feature
is given with min and max level both its level.
"""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, SERVED_VERSIONS, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.feature_levels import FeatureLevels
from broker.api.response_builder import NO_THROTTLE, make, nested

FIRST_FEATURES_VERSION = 3
FIRST_MIN_ZERO_VERSION = 4


def _features(levels: FeatureLevels, header: RequestHeader, cls: type) -> dict[str, Any]:
    """The response's feature fields, as kio's keyword arguments."""
    if header.api_version < FIRST_FEATURES_VERSION:
        return {}
    features = levels.features()
    supported = nested(cls, "SupportedFeatureKey")
    finalized = nested(cls, "FinalizedFeatureKey")
    return dict(
        supported_features=tuple(
            supported(name=name, min_version=lo, max_version=hi) for name, (lo, hi) in sorted(features.supported.items())
            if lo > 0 or header.api_version >= FIRST_MIN_ZERO_VERSION),
        finalized_features_epoch=features.epoch,
        finalized_features=tuple(
            finalized(name=name, max_version_level=level, min_version_level=level)
            for name, level in sorted(features.finalized.items())))


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    api_version = nested(cls, "ApiVersion")
    keys = tuple(
        api_version(api_key=key, min_version=lo, max_version=hi) for key, (lo, hi) in sorted(SERVED_VERSIONS.items())
    )
    return make(cls, error_code=ErrorCode.none, api_keys=keys, throttle_time=NO_THROTTLE,
                **_features(ctx.features, header, cls))
