"""SCRAM credentials of a cluster: one etcd key per user (broker/cluster/etcd_layout.py), so a
user added or changed through AlterUserScramCredentials on any broker logs in on every broker.

The same interface as the one-broker ScramCredentialStore (sasl_credentials.py): `get` and
`describe` read the broker's current MetadataImage (the etcd watch keeps it), so a login never
waits on etcd; `alter` changes each named user by compare-and-swap of its key and returns once
this broker's image shows the change. Another broker sees it when its watch delivers the
event, milliseconds later; a login there in between is refused as for an unknown user.

--sasl-scram-user at start-up adds a credential only where etcd has none for that user and
mechanism: every broker of a cluster is usually started with the same flags, and a restart
must not undo a password changed since through AlterUserScramCredentials. The data dir's
scram-credentials.json is neither read nor written by a cluster member.
"""

from __future__ import annotations

import logging
import secrets

from wire.scram import SCRAM_MECHANISMS, ScramCredential

from broker.security.sasl_credentials import decode_credential, encode_credential, parse_add_scram

log = logging.getLogger(__name__)


class ClusterScramCredentials:
    def __init__(self, metadata) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata

    def get(self, username: str, mechanism: str) -> ScramCredential | None:
        user = self._metadata.image.scram_users.get(username)
        fields = user.credentials.get(mechanism) if user is not None else None
        return decode_credential(fields) if fields is not None else None

    def describe(self) -> dict[str, dict[str, int]]:
        """{user: {mechanism: iterations}}"""
        return {name: {m: int(c["iterations"]) for m, c in user.credentials.items()}
                for name, user in self._metadata.image.scram_users.items()}

    async def alter(self, upserts: list[tuple[str, str, bytes, bytes, int]],
                    deletions: list[tuple[str, str]]) -> None:
        """As ScramCredentialStore.alter: upserts (user, mechanism, salt, salted password,
        iterations), deletions (user, mechanism); checked by the caller."""
        changes: dict[str, list] = {}
        for user, mechanism, salt, salted, iterations in upserts:
            cred = ScramCredential.from_salted_password(SCRAM_MECHANISMS[mechanism][0], salted, salt, iterations)
            changes.setdefault(user, []).append((mechanism, encode_credential(cred)))
        for user, mechanism in deletions:
            changes.setdefault(user, []).append((mechanism, None))
        for user, steps in changes.items():
            await self._metadata.update_scram_user(user, lambda creds, steps=steps: _applied(creds, steps))

    async def add_missing(self, specs: tuple[str, ...]) -> None:
        """--sasl-scram-user values (kafka-storage's --add-scram syntax), each written only if
        etcd has no credential for its user and mechanism."""
        for spec in specs:
            mechanism, name, password, iterations = parse_add_scram(spec)
            if self.get(name, mechanism) is not None:
                continue
            cred = ScramCredential.from_password(SCRAM_MECHANISMS[mechanism][0], password,
                                                 secrets.token_bytes(32), iterations)
            fields = encode_credential(cred)
            await self._metadata.update_scram_user(
                name, lambda creds, m=mechanism, f=fields: creds if m in creds else {**creds, m: f})
            log.info("SCRAM credential of %s for %s stored in etcd", name, mechanism)


def _applied(credentials: dict, steps: list[tuple[str, dict | None]]) -> dict:
    out = dict(credentials)
    for mechanism, fields in steps:
        if fields is None:
            out.pop(mechanism, None)
        else:
            out[mechanism] = fields
    return out
