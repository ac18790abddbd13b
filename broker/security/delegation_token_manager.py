"""Delegation tokens' rules, as Kafka's controller applies them (DelegationTokenControlManager)
and its brokers' token cache serves them (DelegationTokenManager): create, renew, expire,
describe, the SCRAM login with a token, and the sweep of expired tokens. The store is the data
dir's file on one broker (token_store.py) or etcd on a cluster (cluster_token_store.py); both
answer `tokens()` and take `put` / `remove`.

Each call answers (ErrorCode, values) with Kafka's error codes; what a handler checks about the
connection and the ACLs before it gets here is in the handlers. Kafka's order: a disabled broker
(no secret key) answers DELEGATION_TOKEN_AUTH_DISABLED; then an unknown HMAC
DELEGATION_TOKEN_NOT_FOUND; an expired token DELEGATION_TOKEN_EXPIRED; a principal that is
neither the owner nor a renewer DELEGATION_TOKEN_OWNER_MISMATCH. The times a refused renew or
expire answers are 0, as the controller's response data leaves them.

Expiry is enforced at three places: a login with an expired token is refused (Kafka lets one in
until its sweep removes the token, up to delegation.token.expiry.check.interval.ms later); a
renew or expire of one is DELEGATION_TOKEN_EXPIRED; the sweep removes expired tokens every
interval. A connection already logged in with a token stays logged in, as in Kafka without
re-authentication (connections.max.reauth.ms = 0).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac as hmac_lib
import logging
import uuid
from typing import Callable, Mapping

from wire.error_codes import ErrorCode
from wire.scram import ScramCredential

from broker.security.delegation_token import (TokenInformation, key_check, split_principal, token_credentials,
                                              token_hmac)
from broker.settings.delegation_token_options import DelegationTokenSettings

log = logging.getLogger(__name__)


class DelegationTokenManager:
    def __init__(self, settings: DelegationTokenSettings, store, clock: Callable[[], int]) -> None:
        self.settings = settings
        self.store = store  # TokenStore | ClusterTokenStore
        self._clock = clock
        self._indexed: Mapping | None = None  # the store's mapping the HMAC index was built from
        self._by_hmac: dict[bytes, str] = {}

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def hmac(self, token_id: str) -> bytes:
        return token_hmac(self.settings.secret_key, token_id)

    def _token_for_hmac(self, hmac: bytes) -> TokenInformation | None:
        tokens = self.store.tokens()
        if tokens is not self._indexed:  # the store replaces its mapping on a change only
            self._by_hmac = {self.hmac(token_id): token_id for token_id in tokens}
            self._indexed = tokens
        token_id = self._by_hmac.get(bytes(hmac))
        return None if token_id is None else tokens.get(token_id)

    # ---- the four APIs --------------------------------------------------------------------

    async def create(self, owner: str, requester: str, renewers: tuple[str, ...],
                     max_lifetime_ms: int) -> tuple[ErrorCode, TokenInformation | None]:
        """A new token, or DELEGATION_TOKEN_AUTH_DISABLED. `max_lifetime_ms` <= 0: the broker's;
        more than the broker's is cut to it."""
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, None
        now = self._clock()
        lifetime = self.settings.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_ms = now + lifetime
        token_id = str(uuid.uuid4())
        hmac = self.hmac(token_id)
        credentials = await asyncio.to_thread(token_credentials, hmac)  # PBKDF2: off the event loop
        token = TokenInformation(token_id, owner, requester, renewers, now, max_ms,
                                 min(max_ms, now + self.settings.expiry_time_ms), credentials, key_check(hmac))
        await self.store.put(token)
        log.info("created delegation token %s for owner %s (requested by %s)", token.token_id, owner, requester)
        return ErrorCode.none, token

    def _renewable(self, principal: str, hmac: bytes) -> tuple[ErrorCode, TokenInformation | None]:
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, None
        token = self._token_for_hmac(hmac)
        if token is None:
            return ErrorCode.delegation_token_not_found, None
        if token.expired(self._clock()):
            return ErrorCode.delegation_token_expired, None
        if not token.owner_or_renewer(principal):
            return ErrorCode.delegation_token_owner_mismatch, None
        return ErrorCode.none, token

    async def renew(self, principal: str, hmac: bytes, renew_period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry): now + the period (<= 0: delegation.token.expiry.time.ms, and
        never more than it), never past the token's maximum."""
        problem, token = self._renewable(principal, hmac)
        if token is None:
            return problem, 0
        period = self.settings.expiry_time_ms
        if renew_period_ms > 0:
            period = min(period, renew_period_ms)
        expiry = min(token.max_ms, self._clock() + period)
        await self.store.put(dataclasses.replace(token, expiry_ms=expiry), replace_only=True)
        log.info("renewed delegation token %s of %s until %d", token.token_id, token.owner, expiry)
        return ErrorCode.none, expiry

    async def expire(self, principal: str, hmac: bytes, expiry_period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry): a negative period removes the token at once (and is what the
        answer says, as Kafka's); else the token expires that long from now."""
        problem, token = self._renewable(principal, hmac)
        if token is None:
            return problem, 0
        if expiry_period_ms < 0:
            await self.store.remove([token.token_id])
            log.info("expired delegation token %s of %s", token.token_id, token.owner)
            return ErrorCode.none, expiry_period_ms
        expiry = min(token.max_ms, self._clock() + expiry_period_ms)
        await self.store.put(dataclasses.replace(token, expiry_ms=expiry), replace_only=True)
        return ErrorCode.none, expiry

    def describe(self, visible: Callable[[TokenInformation], bool]) -> list[tuple[TokenInformation, bytes]]:
        return [(t, self.hmac(t.token_id)) for _, t in sorted(self.store.tokens().items()) if visible(t)]

    # ---- logins and the sweep -------------------------------------------------------------

    def login(self, token_id: str, mechanism: str) -> tuple[ScramCredential, str] | None:
        """The SCRAM credential of a live token and its owner's name, for wire/scram.py's
        tokenauth=true login; None for no such token, an expired one, or one made under another
        secret key. Lookups and one HMAC: nothing here costs a login more than microseconds."""
        if not self.enabled:
            return None
        token = self.store.tokens().get(token_id)
        if token is None or token.expired(self._clock()) or mechanism not in token.credentials:
            return None
        if not hmac_lib.compare_digest(token.key_check, key_check(self.hmac(token_id))):
            log.warning("delegation token %s was made under another delegation.token.secret.key", token_id)
            return None
        return token.credentials[mechanism], split_principal(token.owner)[1]

    async def sweep(self) -> int:
        """Removes every expired token; how many went."""
        now = self._clock()
        gone = [t.token_id for t in self.store.tokens().values() if t.expired(now)]
        if gone:
            await self.store.remove(gone)
            log.info("removed %d expired delegation tokens: %s", len(gone), ", ".join(gone))
        return len(gone)

    async def sweep_loop(self) -> None:
        interval = self.settings.expiry_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:  # etcd away: the next round tries again
                log.exception("delegation token sweep failed")
