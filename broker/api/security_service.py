"""What the security admin handlers change: the ACLs (Create/Describe/DeleteAcls), the SCRAM
credentials (Describe/AlterUserScramCredentials), the delegation tokens (APIs 38-41), and the
SASL mechanisms this broker offers (SaslHandshake's answer). broker/security/security_admin.py's
SecurityAdministration is the one implementation; each store is one broker's file or etcd's on
a cluster member.

The ACL *checks* of a request are ctx.authorizer's (broker/security/acl/checks.py), not here.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from wire.error_codes import ErrorCode
from wire.scram import ScramCredential

from broker.security.acl.model import AclBinding, AclFilter
from broker.security.delegation_token import TokenInformation


class AclAdmin(Protocol):
    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        """The bindings the filter matches, sorted."""

    async def create(self, acls: Iterable[AclBinding]) -> None:
        """Adds bindings (checked by the caller), durably; one that exists already is no change."""

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Removes, durably, what each filter matches; returns the bindings each one removed."""


class ScramAdmin(Protocol):
    def get(self, username: str, mechanism: str) -> ScramCredential | None: ...

    def describe(self) -> dict[str, dict[str, int]]:
        """{user: {mechanism: iterations}}"""

    async def alter(self, upserts: list[tuple[str, str, bytes, bytes, int]],
                    deletions: list[tuple[str, str]]) -> None:
        """upserts: (user, mechanism, salt, salted password, iterations); deletions: (user,
        mechanism); checked by the caller, kept durably before it returns."""


class TokenAdmin(Protocol):
    @property
    def enabled(self) -> bool:
        """Whether delegation.token.secret.key is set (else every token API is refused)."""

    def hmac(self, token_id: str) -> bytes: ...

    async def create(self, owner: str, requester: str, renewers: tuple[str, ...],
                     max_lifetime_ms: int) -> tuple[ErrorCode, TokenInformation | None]:
        """A new token, or DELEGATION_TOKEN_AUTH_DISABLED; `max_lifetime_ms` <= 0: the broker's."""

    async def renew(self, principal: str, hmac: bytes, renew_period_ms: int) -> tuple[ErrorCode, int]:
        """(error, the new expiry)."""

    async def expire(self, principal: str, hmac: bytes, expiry_period_ms: int) -> tuple[ErrorCode, int]:
        """(error, the new expiry); a negative period removes the token at once."""

    def describe(self, visible: Callable[[TokenInformation], bool]) -> list[tuple[TokenInformation, bytes]]:
        """The tokens `visible` accepts, each with its HMAC, by id."""


class SecurityAdmin(Protocol):
    @property
    def acls(self) -> AclAdmin | None:
        """The ACL store; None when the broker runs without an authorizer."""

    @property
    def scram(self) -> ScramAdmin: ...

    @property
    def tokens(self) -> TokenAdmin: ...

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        """The SASL mechanisms this broker offers (sasl.enabled.mechanisms)."""
