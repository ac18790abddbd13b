"""UpdateFeatures v0-2 (KIP-584): finalize transaction.version, group.version or share.version
at another level, by Kafka's rules (broker/features.py) and with its answers:

- ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED;
- all or nothing: the first update that fails fails the request, INVALID_UPDATE_VERSION with
  Kafka's message, and nothing changes; validate_only (v1+) checks and changes nothing;
- v0 names a downgrade by allow_downgrade (a safe downgrade), v1+ by upgrade_type;
- v0-1 repeat the request's error in a result per feature; v2 answers the error alone, as
  Kafka's UpdateFeaturesResponse.createWithErrors.

The new levels are kept (broker/feature_store.py) before the answer, and ApiVersions shows them
with a higher finalized-features epoch from then on.
"""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.features import SAFE_DOWNGRADE, UPGRADE, FeatureUpdateError, updated
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.security.acl.model import Operation

RESULTS_DROPPED_VERSION = 2


def _upgrade_type(update: Any) -> int:
    if hasattr(update, "upgrade_type"):
        return int(update.upgrade_type)
    return SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE


async def _apply(ctx: ApiContext, request: Request) -> tuple[ErrorCode, str | None]:
    if not ctx.authorizer.cluster_allowed(Operation.ALTER):
        return ErrorCode.cluster_authorization_failed, None
    updates = [(u.feature, u.max_version_level, _upgrade_type(u)) for u in request.feature_updates]
    try:
        await ctx.features.update(lambda current: updated(current, updates, ctx.config.node_id),
                                     getattr(request, "validate_only", False))
    except FeatureUpdateError as exc:
        return ErrorCode.invalid_update_version, str(exc)
    return ErrorCode.none, None


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    code, message = await _apply(ctx, request)
    extra: dict[str, Any] = {}
    if header.api_version < RESULTS_DROPPED_VERSION:
        result_cls = nested(cls, "UpdatableFeatureResult")
        extra["results"] = tuple(make(result_cls, feature=u.feature, error_code=code, error_message=message)
                                 for u in request.feature_updates)
    return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message, **extra)
