"""The delegation token rules against Kafka's (DelegationTokenControlManager), with a clock the
test moves: the times a create and a renew give, the order of the errors, expiry at the
millisecond, and the sweep; over the one-broker store in a temporary data dir."""

from __future__ import annotations

import asyncio
import hmac as hmac_lib

from wire.error_codes import ErrorCode
from broker.security.delegation_token_manager import DelegationTokenManager
from broker.security.token_store import TokenStore
from broker.settings.delegation_token_options import DelegationTokenSettings

KEY, EXPIRY, MAX = "k", 1000, 5000


class Clock:
    now = 100_000

    def __call__(self) -> int:
        return self.now


def _manager(tmp_path, key: str | None = KEY) -> tuple[DelegationTokenManager, Clock]:
    clock = Clock()
    return DelegationTokenManager(DelegationTokenSettings(key, MAX, EXPIRY, 3_600_000), TokenStore(tmp_path), clock), clock


def test_create_renew_expire_follow_kafkas_times_and_errors(tmp_path):
    async def scenario():
        tokens, clock = _manager(tmp_path)
        code, token = await tokens.create("User:alice", "User:alice", ("User:bob",), -1)
        assert code is ErrorCode.none and (token.issue_ms, token.expiry_ms, token.max_ms) == (100_000, 101_000, 105_000)
        hmac = tokens.hmac(token.token_id)
        assert hmac == hmac_lib.new(b"k", token.token_id.encode(), "sha512").digest()
        assert (await tokens.create("User:a", "User:a", (), 3000))[1].max_ms == 103_000
        assert (await tokens.create("User:a", "User:a", (), 10 * MAX))[1].max_ms == 105_000

        clock.now = 101_000  # the expiry itself is still valid; a millisecond later is not
        assert await tokens.renew("User:bob", hmac, 500) == (ErrorCode.none, 101_500)
        assert await tokens.renew("User:alice", hmac, 50_000) == (ErrorCode.none, 102_000)  # capped at expiry.time.ms
        assert await tokens.renew("User:carol", hmac, 500) == (ErrorCode.delegation_token_owner_mismatch, 0)
        assert await tokens.renew("User:alice", b"nope", 500) == (ErrorCode.delegation_token_not_found, 0)
        clock.now = 104_500
        assert await tokens.renew("User:alice", hmac, 500) == (ErrorCode.delegation_token_expired, 0)

        code, token = await tokens.create("User:alice", "User:alice", (), 600)  # max 105_100
        hmac = tokens.hmac(token.token_id)
        clock.now = 104_900
        assert await tokens.renew("User:alice", hmac, 1000) == (ErrorCode.none, 105_100)  # never past the max
        assert await tokens.expire("User:alice", hmac, 50) == (ErrorCode.none, 104_950)
        assert tokens.login(token.token_id, "SCRAM-SHA-256")[1] == "alice"
        clock.now = 104_951
        assert tokens.login(token.token_id, "SCRAM-SHA-256") is None  # expired: no login
        assert await tokens.expire("User:alice", hmac, -1) == (ErrorCode.delegation_token_expired, 0)
    asyncio.run(scenario())


def test_expire_at_once_removes_and_the_sweep_removes_the_expired(tmp_path):
    async def scenario():
        tokens, clock = _manager(tmp_path)
        _, kept = await tokens.create("User:alice", "User:alice", (), -1)
        _, gone = await tokens.create("User:alice", "User:alice", (), -1)
        assert await tokens.expire("User:alice", tokens.hmac(gone.token_id), -5) == (ErrorCode.none, -5)
        assert list(tokens.store.tokens()) == [kept.token_id]
        _, brief = await tokens.create("User:alice", "User:alice", (), 200)
        clock.now += 201
        assert await tokens.sweep() == 1
        assert list(TokenStore(tmp_path).tokens()) == [kept.token_id]  # what a restart reads
    asyncio.run(scenario())


def test_without_a_secret_key_every_call_is_disabled(tmp_path):
    async def scenario():
        tokens, _ = _manager(tmp_path, key=None)
        assert await tokens.create("User:a", "User:a", (), -1) == (ErrorCode.delegation_token_auth_disabled, None)
        assert await tokens.renew("User:a", b"x", 1) == (ErrorCode.delegation_token_auth_disabled, 0)
        assert await tokens.expire("User:a", b"x", -1) == (ErrorCode.delegation_token_auth_disabled, 0)
        assert tokens.login("t", "SCRAM-SHA-256") is None
    asyncio.run(scenario())


def test_a_token_made_under_another_secret_key_logs_no_one_in(tmp_path):
    async def scenario():
        tokens, _ = _manager(tmp_path)
        _, token = await tokens.create("User:alice", "User:alice", (), -1)
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            credential, owner = tokens.login(token.token_id, mechanism)
            assert owner == "alice" and credential.iterations == 4096
        rotated, _ = _manager(tmp_path, key="another key")  # the same data dir, read again
        assert token.token_id in rotated.store.tokens()
        assert rotated.login(token.token_id, "SCRAM-SHA-256") is None
    asyncio.run(scenario())
