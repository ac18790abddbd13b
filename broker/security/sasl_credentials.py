"""Who may log in: PLAIN users (read from a file) and SCRAM credentials (kept by the broker).

PLAIN users come from the `user_NAME="PASSWORD"` entries of Kafka's PlainLoginModule JAAS
section, so a Kafka broker's JAAS file works as is; anything else in the file is ignored:

    KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret"; };

SCRAM credentials are what wire/scram.py's ScramCredential holds (salt, iterations, StoredKey,
ServerKey; never a password), one per user and mechanism, in `<data-dir>/scram-credentials.json`:

    {"version": 1, "users": {"<name>": {"SCRAM-SHA-256": {"salt": "<base64>", "iterations": 4096,
                                                          "stored_key": "<base64>", "server_key": "<base64>"}}}}

The file is replaced whole (write a temp file, fsync, rename, fsync the directory: after a
crash it holds the old or the new credentials, never a mix) each time
AlterUserScramCredentials or --sasl-scram-user changes something, and read once at start.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import re
import secrets
from dataclasses import asdict
from pathlib import Path

from segment.file_io import replace_file
from wire.scram import SCRAM_MECHANISMS, ScramCredential

FILE_NAME = "scram-credentials.json"
DEFAULT_ITERATIONS = 4096
_JAAS_USER = re.compile(r'\buser_([^\s=]+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_ADD_SCRAM = re.compile(r"^(SCRAM-SHA-256|SCRAM-SHA-512)=\[(.*)\]$")


class InvalidCredentialSpec(ValueError):
    pass


class PlainUsers:
    def __init__(self, users: dict[str, str]) -> None:
        self._users = users

    @classmethod
    def from_file(cls, path: Path | None) -> "PlainUsers":
        if path is None:
            return cls({})
        text = Path(path).read_text()
        return cls({m.group(1): m.group(2).replace('\\"', '"').replace("\\\\", "\\")
                    for m in _JAAS_USER.finditer(text)})

    def password_ok(self, username: str, password: str) -> bool:
        expected = self._users.get(username)
        # compared even for an unknown user, so the time taken does not say which names exist
        return hmac.compare_digest((expected or "\0").encode(), password.encode()) and expected is not None

    def __len__(self) -> int:
        return len(self._users)


def parse_add_scram(spec: str) -> tuple[str, str, str, int]:
    """kafka-storage's --add-scram value: 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
    (iterations=N optional) -> (mechanism, name, password, iterations)."""
    m = _ADD_SCRAM.match(spec.strip())
    if m is None:
        raise InvalidCredentialSpec(f"{spec!r}: expected SCRAM-SHA-256=[name=NAME,password=PASSWORD] "
                                    f"or SCRAM-SHA-512=[...]")
    fields = dict(part.split("=", 1) for part in m.group(2).split(",") if "=" in part)
    name, password = fields.get("name", "").strip('"'), fields.get("password", "").strip('"')
    if not name or not password:
        raise InvalidCredentialSpec(f"{spec!r}: name and password are required")
    return m.group(1), name, password, int(fields.get("iterations", DEFAULT_ITERATIONS))


def encode_credential(cred: ScramCredential) -> dict:
    """The stored fields, as the file (and a cluster's etcd key) keep them."""
    return {k: (base64.b64encode(v).decode() if isinstance(v, bytes) else v) for k, v in asdict(cred).items()}


def decode_credential(body: dict) -> ScramCredential:
    return ScramCredential(base64.b64decode(body["salt"]), base64.b64decode(body["stored_key"]),
                           base64.b64decode(body["server_key"]), int(body["iterations"]))


class ScramCredentialStore:
    """One broker's SCRAM credentials: in memory, and in the data dir's file."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._users: dict[str, dict[str, ScramCredential]] = {}
        if self._path.exists():
            body = json.loads(self._path.read_text())
            self._users = {user: {mech: decode_credential(c) for mech, c in mechs.items()}
                           for user, mechs in body["users"].items()}

    def get(self, username: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(username, {}).get(mechanism)

    def describe(self) -> dict[str, dict[str, int]]:
        """{user: {mechanism: iterations}}"""
        return {u: {m: c.iterations for m, c in mechs.items()} for u, mechs in self._users.items()}

    def set_password(self, mechanism: str, username: str, password: str, iterations: int) -> None:
        """--sasl-scram-user at start-up: salted here, as kafka-storage format does."""
        salt = secrets.token_bytes(32)
        hash_name = SCRAM_MECHANISMS[mechanism][0]
        self._users.setdefault(username, {})[mechanism] = ScramCredential.from_password(
            hash_name, password, salt, iterations)
        self._write()

    async def alter(self, upserts: list[tuple[str, str, bytes, bytes, int]],
                    deletions: list[tuple[str, str]]) -> None:
        """upserts: (user, mechanism, salt, salted password, iterations) as AlterUserScramCredentials
        carries them; deletions: (user, mechanism). Checked by the caller."""
        for user, mechanism, salt, salted, iterations in upserts:
            cred = ScramCredential.from_salted_password(SCRAM_MECHANISMS[mechanism][0], salted, salt, iterations)
            self._users.setdefault(user, {})[mechanism] = cred
        for user, mechanism in deletions:
            mechs = self._users.get(user, {})
            mechs.pop(mechanism, None)
            if not mechs:
                self._users.pop(user, None)
        text = self._text()
        await asyncio.to_thread(replace_file, self._path, text)  # fsyncs: off the event loop

    def _text(self) -> str:
        return json.dumps({"version": 1, "users": {u: {m: encode_credential(c) for m, c in mechs.items()}
                                                   for u, mechs in self._users.items()}}, indent=1)

    def _write(self) -> None:
        replace_file(self._path, self._text())
