"""Where one broker keeps its delegation tokens: `<data-dir>/delegation-tokens.json`, read once
at start.

    {"version": 1, "tokens": [{"token_id": "<uuid>", "owner": "User:alice", "requester": "User:alice",
                               "renewers": ["User:bob"], "issue_ms": 1765000000000,
                               "max_ms": 1765604800000, "expiry_ms": 1765086400000,
                               "scram": {"SCRAM-SHA-256": {"salt", "iterations", "stored_key",
                                                           "server_key"}, "SCRAM-SHA-512": {...}},
                               "key_check": "<base64 SHA-256 of the HMAC>"}, ...]}

The token information and its SCRAM credentials (scram-credentials.json's form), never the HMAC
itself: that is derived from delegation.token.secret.key (delegation_token.py). Each create, renew, expire and sweep that changes something replaces the
file whole (temp file, fsync, rename, fsync of the directory: after a crash it holds the tokens
before or after that change, never a mix) before the request is answered, and only then does a
login or a describe see the change: a token answered to a client survives a crash. Writes are
serialized so an older set can never be renamed over a newer one.

The same interface as the cluster's store (cluster_token_store.py): `tokens()` is a mapping that
is replaced, never changed in place, so a reader may keep it as a snapshot.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from segment.file_io import replace_file

from broker.security.delegation_token import TokenInformation

FILE_NAME = "delegation-tokens.json"


class TokenStore:
    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        tokens = {}
        if self._path.exists():
            body = json.loads(self._path.read_text())
            tokens = {d["token_id"]: TokenInformation.from_json(d) for d in body["tokens"]}
        self._tokens: Mapping[str, TokenInformation] = MappingProxyType(tokens)
        self._write_lock = asyncio.Lock()

    def tokens(self) -> Mapping[str, TokenInformation]:
        return self._tokens

    async def put(self, token: TokenInformation, replace_only: bool = False) -> None:
        """Adds the token, or replaces the one of its id; `replace_only` (a renew, an expire):
        only if that one is still there, so a token removed meanwhile does not come back."""
        async with self._write_lock:
            if not replace_only or token.token_id in self._tokens:
                await self._commit({**self._tokens, token.token_id: token})

    async def remove(self, token_ids: list[str]) -> None:
        async with self._write_lock:
            kept = {i: t for i, t in self._tokens.items() if i not in token_ids}
            if len(kept) != len(self._tokens):
                await self._commit(kept)

    async def _commit(self, tokens: dict[str, TokenInformation]) -> None:
        text = json.dumps({"version": 1, "tokens": [t.to_json() for _, t in sorted(tokens.items())]}, indent=1)
        await asyncio.to_thread(replace_file, self._path, text)  # fsyncs: off the event loop
        self._tokens = MappingProxyType(tokens)
