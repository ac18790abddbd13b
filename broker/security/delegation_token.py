"""One delegation token (KIP-48) as Kafka keeps it: TokenInformation, and the HMAC that is its
password.

A token is its id (a random UUID string), its owner (whose identity a login with the token
proves), the principal that asked for it, the principals besides the owner that may renew or
expire it, and three times in epoch milliseconds: issued, expires (pushed forward by a renew,
never past the maximum) and the maximum. The HMAC is HMAC-SHA512 of the id's UTF-8 bytes keyed by
delegation.token.secret.key (Kafka's DelegationTokenManager.createHmac): it is never stored, only
derived, so every broker with the same key derives the same one, and changing the key voids
every token.

A client logs in with SCRAM, user name = token id, password = base64 of the HMAC, and the
`tokenauth=true` extension. The SCRAM credential of each mechanism is derived from that password
with the mechanism's minimum iterations, as Kafka's DelegationTokenManager does, but once, when
the token is created (PBKDF2 takes 15-45 ms here: a worker thread's work, never a login's on the
event loop), and kept with the token like any SCRAM credential (salt, StoredKey, ServerKey:
nothing a client proof can be made from). `key_check` (SHA-256 of the HMAC) ties those
credentials to the key they came from: after delegation.token.secret.key changes, a broker's
HMAC of the id no longer matches it and the token logs no one in, as in Kafka.

Principals are KafkaPrincipal strings, "User:alice"; two principals are the same when type and
name are (Kafka's KafkaPrincipal.equals).
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_lib
import secrets
from dataclasses import dataclass, field
from typing import Mapping

from wire.scram import SCRAM_MECHANISMS, ScramCredential

from broker.security.sasl_credentials import decode_credential, encode_credential

HMAC_ALGORITHM = "sha512"  # Kafka's HmacSHA512


@dataclass(frozen=True)
class TokenInformation:
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int
    credentials: Mapping[str, ScramCredential] = field(default_factory=dict)  # by SCRAM mechanism
    key_check: bytes = b""  # SHA-256 of the HMAC the credentials were derived from

    def expired(self, now_ms: int) -> bool:
        """Kafka's test, in its controller, its sweeper and here: past either time."""
        return self.max_ms < now_ms or self.expiry_ms < now_ms

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def to_json(self) -> dict:
        return {"token_id": self.token_id, "owner": self.owner, "requester": self.requester,
                "renewers": list(self.renewers), "issue_ms": self.issue_ms, "max_ms": self.max_ms,
                "expiry_ms": self.expiry_ms,
                "scram": {m: encode_credential(c) for m, c in sorted(self.credentials.items())},
                "key_check": base64.b64encode(self.key_check).decode()}

    @classmethod
    def from_json(cls, d: dict) -> "TokenInformation":
        return cls(d["token_id"], d["owner"], d["requester"], tuple(d["renewers"]), int(d["issue_ms"]),
                   int(d["max_ms"]), int(d["expiry_ms"]),
                   {m: decode_credential(c) for m, c in d["scram"].items()}, base64.b64decode(d["key_check"]))


def split_principal(principal: str) -> tuple[str, str]:
    """"User:alice" -> ("User", "alice"), as Kafka's SecurityUtils.parseKafkaPrincipal."""
    kind, _, name = principal.partition(":")
    return kind, name


def token_hmac(secret_key: str, token_id: str) -> bytes:
    return hmac_lib.new(secret_key.encode(), token_id.encode(), HMAC_ALGORITHM).digest()


def token_password(hmac: bytes) -> str:
    """What a client puts in sasl.jaas.config's password: the HMAC in base64."""
    return base64.b64encode(hmac).decode()


def key_check(hmac: bytes) -> bytes:
    return hashlib.sha256(hmac).digest()


def token_credentials(hmac: bytes) -> dict[str, ScramCredential]:
    """Every SCRAM mechanism's credential for the token's password (PBKDF2: call it in a worker
    thread)."""
    return {mechanism: ScramCredential.from_password(hash_name, token_password(hmac), secrets.token_bytes(32),
                                                     min_iterations)
            for mechanism, (hash_name, _, min_iterations) in SCRAM_MECHANISMS.items()}
