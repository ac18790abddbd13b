"""SCRAM (RFC 5802, RFC 7677) as Kafka uses it: SCRAM-SHA-256 and SCRAM-SHA-512, sans-IO.

The exchange, two round trips, no channel binding (Kafka's gs2 header is "n,,"):

    client-first   n,,n=<user>,r=<client nonce>[,<key>=<value>...]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>

What the broker keeps per user and mechanism (ScramCredential) is Kafka's: salt, iterations,
StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
"Server Key") — never the password, nor SaltedPassword, from which a client proof could be made.
The proof is checked by recovering ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage)
and comparing H(ClientKey) with StoredKey in constant time.
Nonces are the caller's (the broker draws them from `secrets`), so a test can replay the RFCs'
exchanges byte for byte.

Extensions (RFC 5802's extension attributes after the nonce, Kafka's ScramExtensions): the one
Kafka reads is `tokenauth=true` (KIP-48), a delegation token login: the user name is the token
id, the password the token's HMAC in base64, and the identity proven is the token's owner. The
server looks the token up through its own callback; other extensions are ignored, as Kafka's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Callable

from .sasl_mechanism import SaslAuthenticationFailed

# mechanism -> (hashlib name, Kafka's ScramMechanism type in API 50/51, minimum iterations)
SCRAM_MECHANISMS = {"SCRAM-SHA-256": ("sha256", 1, 4096), "SCRAM-SHA-512": ("sha512", 2, 4096)}
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations
MECHANISM_BY_TYPE = {kind: name for name, (_, kind, _) in SCRAM_MECHANISMS.items()}
TOKEN_AUTH = "tokenauth"  # Kafka's ScramLoginModule.TOKEN_AUTH_CONFIG extension
# Kafka's ScramMessages: an extension is ALPHA key '=' printable ASCII without ',' or '='
_EXTENSION = re.compile(r"([a-zA-Z]+)=([\x01-\x2b\x2d-\x3c\x3e-\x7f]+)")


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, hash_name: str, salted: bytes, salt: bytes, iterations: int) -> "ScramCredential":
        client_key = _hmac(hash_name, salted, b"Client Key")
        return cls(salt, hashlib.new(hash_name, client_key).digest(),
                   _hmac(hash_name, salted, b"Server Key"), iterations)

    @classmethod
    def from_password(cls, hash_name: str, password: str, salt: bytes, iterations: int) -> "ScramCredential":
        return cls.from_salted_password(hash_name, salted_password(hash_name, password, salt, iterations),
                                        salt, iterations)


def _attributes(message: str) -> list[tuple[str, str]]:
    out = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslAuthenticationFailed(f"Invalid SCRAM message: bad attribute {part[:20]!r}")
        out.append((part[0], part[2:]))
    return out


def _decode_username(name: str) -> str:
    """RFC 5802 saslname: ',' and '=' travel as '=2C' and '=3D'."""
    return name.replace("=2C", ",").replace("=3D", "=")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise SaslAuthenticationFailed("Invalid SCRAM message: bad base64") from None


def _extensions(parts: list[str]) -> dict[str, str]:
    out = {}
    for part in parts:
        m = _EXTENSION.fullmatch(part)
        if m is None:
            raise SaslAuthenticationFailed(f"Invalid SCRAM client first message: bad extension {part[:20]!r}")
        out[m.group(1)] = m.group(2)
    return out


# token id -> (the token's credential, its owner's name), or None for no such (or an expired) token
TokenLookup = Callable[[str], "tuple[ScramCredential, str] | None"]


class ScramServer:
    """Server side of one exchange. `lookup(username)` gives the user's credential or None;
    `token_lookup(token_id)`, for a `tokenauth=true` login, the token's credential and owner
    (None: this server takes no token logins)."""

    def __init__(self, mechanism: str, lookup, server_nonce: str, hash_name: str | None = None,
                 token_lookup: TokenLookup | None = None) -> None:
        self.mechanism = mechanism
        self._token_lookup = token_lookup
        self.token_authenticated = False  # the login proved a delegation token; username is its owner
        self._hash = hash_name or SCRAM_MECHANISMS[mechanism][0]
        self._lookup = lookup
        self._server_nonce = server_nonce
        self._state = "client-first"
        self._credential: ScramCredential | None = None
        self._nonce = self._first_bare = self._server_first = ""
        self.complete = False
        self.username: str | None = None

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("Invalid SCRAM message: not UTF-8") from None
        if self._state == "client-first":
            return self._client_first(text).encode()
        if self._state == "client-final":
            return self._client_final(text).encode()
        raise SaslAuthenticationFailed("Authentication failed: SCRAM exchange already over")

    def _client_first(self, text: str) -> str:
        gs2, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y"):
            raise SaslAuthenticationFailed("Invalid SCRAM client first message: channel binding is not supported")
        parts = bare.split(",")
        attrs = _attributes(",".join(parts[:2]))
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise SaslAuthenticationFailed("Invalid SCRAM client first message")
        extensions = _extensions(parts[2:])
        username = _decode_username(attrs[0][1])
        if authzid and _decode_username(authzid.removeprefix("a=")) != username:
            raise SaslAuthenticationFailed("Authentication failed: authorization id differs from username")
        if extensions.get(TOKEN_AUTH, "").lower() == "true":  # Java's Boolean.parseBoolean
            found = self._token_lookup(username) if self._token_lookup is not None else None
            credential, identity = found if found is not None else (None, None)
            self.token_authenticated = found is not None
        else:
            credential, identity = self._lookup(username), username
        if credential is None:
            raise SaslAuthenticationFailed("Authentication failed: Invalid user credentials")
        self._credential, self.username = credential, identity
        self._gs2 = f"{gs2},{authzid},"
        self._nonce = attrs[1][1] + self._server_nonce
        self._first_bare = bare
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = "client-final"
        return self._server_first

    def _client_final(self, text: str) -> str:
        without_proof, sep, proof = text.rpartition(",p=")
        attrs = _attributes(without_proof) if sep else []
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise SaslAuthenticationFailed("Invalid SCRAM client final message")
        # Kafka's ScramSaslServer checks only that the nonce ends with the server-first one:
        # librdkafka 2.0 (Debian's kcat) sends its client nonce twice in front of it.
        if _unb64(attrs[0][1]) != self._gs2.encode() or not attrs[1][1].endswith(self._nonce):
            raise SaslAuthenticationFailed("Invalid SCRAM client final message: channel binding or nonce mismatch")
        cred = self._credential
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self._hash, cred.stored_key, auth_message)
        proof_bytes = _unb64(proof)
        if len(proof_bytes) != len(signature):
            raise SaslAuthenticationFailed(self._invalid())
        client_key = bytes(a ^ b for a, b in zip(proof_bytes, signature))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), cred.stored_key):
            raise SaslAuthenticationFailed(self._invalid())
        self._state, self.complete = "done", True
        return "v=" + _b64(_hmac(self._hash, cred.server_key, auth_message))

    def _invalid(self) -> str:
        return ("Authentication failed during authentication due to invalid credentials with SASL "
                f"mechanism {self.mechanism}")


class ScramClient:
    """Client side (a follower logging in to its leader; tests)."""

    def __init__(self, mechanism: str, username: str, password: str, client_nonce: str,
                 hash_name: str | None = None, extensions: dict[str, str] | None = None) -> None:
        self._hash = hash_name or SCRAM_MECHANISMS[mechanism][0]
        self._password = password
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._first_bare = f"n={name},r={client_nonce}" + "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        self._client_nonce = client_nonce
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(_attributes(text))
        nonce, salt, iterations = attrs.get("r", ""), _unb64(attrs.get("s", "")), int(attrs.get("i", "0"))
        if not nonce.startswith(self._client_nonce) or iterations < 1:
            raise SaslAuthenticationFailed("Invalid SCRAM server first message")
        salted = salted_password(self._hash, self._password, salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        client_key = _hmac(self._hash, salted, b"Client Key")
        signature = _hmac(self._hash, hashlib.new(self._hash, client_key).digest(), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = _hmac(self._hash, _hmac(self._hash, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        if server_final.decode() != "v=" + _b64(self._server_signature):
            raise SaslAuthenticationFailed("Invalid SCRAM server final message: the server does not know the password")
