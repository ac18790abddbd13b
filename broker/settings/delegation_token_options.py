"""The delegation.token.* settings (KIP-48), declared in the settings table (table.py) and
gathered here. Kafka's rule: without delegation.token.secret.key, or with an empty one, the
broker has no delegation tokens, and the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DelegationTokenSettings:
    secret_key: str | None  # delegation.token.secret.key; None: tokens disabled
    max_lifetime_ms: int  # delegation.token.max.lifetime.ms: no renew goes past issue + this
    expiry_time_ms: int  # delegation.token.expiry.time.ms: a new or renewed token's validity
    expiry_check_interval_ms: int  # delegation.token.expiry.check.interval.ms: the sweep's period

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None


def delegation_token_settings(options: dict) -> DelegationTokenSettings:
    return DelegationTokenSettings(**{**options, "secret_key": options["secret_key"] or None})
