"""Every advertised version of the delegation token APIs (KIP-48), over a raw socket:
CreateDelegationToken v1-3, RenewDelegationToken v1-2, ExpireDelegationToken v1-2 and
DescribeDelegationToken v1-3, each with Kafka's error codes — a PLAINTEXT connection and a
token-authenticated one refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), a token for another
owner without CreateTokens (DELEGATION_TOKEN_AUTHORIZATION_FAILED), a renewer that is not a User
(INVALID_PRINCIPAL_TYPE), an unknown HMAC, a principal that neither owns nor renews the token,
an expired token, a broker with no secret key (DELEGATION_TOKEN_AUTH_DISABLED) — and a SCRAM
login with `tokenauth=true` whose principal is the token's owner; the tokens survive a restart.

One broker for the module with a SASL_PLAINTEXT listener (SCRAM users admin, alice, bob, carol,
dave) beside the PLAINTEXT one, ACLs on (admin a super user, who grants the token ACLs the tests
need), and a short expiry; one more without delegation.token.secret.key.
"""

from __future__ import annotations

import hmac as hmac_lib
import time

import pytest

from compat_tests.helpers.broker_process import BrokerProcess, free_port
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.token_requests import _password, call, create
from compat_tests.helpers.waiting import wait_until
from wire.scram import ScramClient

NONE, UNKNOWN_SERVER_ERROR, SASL_AUTHENTICATION_FAILED = 0, -1, 58
AUTH_DISABLED, NOT_FOUND, OWNER_MISMATCH, NOT_ALLOWED, AUTHORIZATION_FAILED, EXPIRED, INVALID_PRINCIPAL_TYPE = (
    61, 62, 63, 64, 65, 66, 67)
SECRET = "token-secret-key"
EXPIRY_MS, MAX_LIFETIME_MS = 600_000, 3_600_000
USERS = ("admin", "alice", "bob", "carol", "dave")
USER_RESOURCE, DELEGATION_TOKEN_RESOURCE, LITERAL = 7, 6, 3
DESCRIBE, CREATE_TOKENS, DESCRIBE_TOKENS, ALLOW = 8, 13, 14, 3


def _start(tmp_path_factory, name: str, *extra: str) -> BrokerProcess:
    sasl_port, plain_port = free_port(), free_port()
    proc = BrokerProcess(port=plain_port, workdir=tmp_path_factory.mktemp(name), extra_args=[
        "--listeners", f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        *[a for u in USERS for a in ("--sasl-scram-user", f"SCRAM-SHA-256=[name={u},password={u}-secret]")],
        *extra])
    proc.sasl_port = sasl_port
    return proc


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = _start(tmp_path_factory, "tokens", "--delegation-token-secret-key", SECRET,
                  "--delegation-token-expiry-time-ms", str(EXPIRY_MS),
                  "--delegation-token-max-lifetime-ms", str(MAX_LIFETIME_MS),
                  "--authorizer", "--super-users", "User:admin")
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def login(broker, user: str, password: str | None = None, token: bool = False) -> Client:
    """A SASL_PLAINTEXT connection logged in with SCRAM-SHA-256 (a token's id and HMAC with
    `token`); raises AssertionError if the broker refuses."""
    c = Client("127.0.0.1", broker.sasl_port)
    assert c.request(17, 1, mechanism="SCRAM-SHA-256").error_code == NONE
    scram = ScramClient("SCRAM-SHA-256", user, password or f"{user}-secret", "raw-nonce",
                        extensions={"tokenauth": "true"} if token else None)
    first = c.request(36, 2, auth_bytes=scram.first())
    assert first.error_code == NONE, first.error_message
    final = c.request(36, 2, auth_bytes=scram.final(first.auth_bytes))
    assert final.error_code == NONE, final.error_message
    scram.verify(final.auth_bytes)
    return c


def _grant(broker, operation: int, resource_type: int, resource: str, principal: str) -> None:
    with login(broker, "admin") as admin:
        r = admin.request(30, 3, creations=[{
            "resource_type": resource_type, "resource_name": resource, "resource_pattern_type": LITERAL,
            "principal": principal, "host": "*", "operation": operation, "permission_type": ALLOW}])
        assert [x.error_code for x in r.results] == [NONE]


@over_versions(38)
def test_create_delegation_token(broker, version):
    with login(broker, "alice") as alice:
        before = int(time.time() * 1000)
        r = create(alice, version, renewers=[("User", "carol")])
        assert r.error_code == NONE
        assert (r.principal_type, r.principal_name) == ("User", "alice")
        if version >= 3:
            assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
        issue = r.issue_timestamp
        assert before <= issue <= int(time.time() * 1000)
        assert (r.expiry_timestamp, r.max_timestamp) == (issue + EXPIRY_MS, issue + MAX_LIFETIME_MS)
        assert r.hmac == hmac_lib.new(SECRET.encode(), r.token_id.encode(), "sha512").digest()
        short = create(alice, version, max_lifetime_ms=60_000)  # under both defaults: expiry is the max too
        assert short.max_timestamp == short.issue_timestamp + 60_000 == short.expiry_timestamp
        longer = create(alice, version, max_lifetime_ms=10 * MAX_LIFETIME_MS)  # cut to the broker's
        assert longer.max_timestamp == longer.issue_timestamp + MAX_LIFETIME_MS

        bad = create(alice, version, renewers=[("User", "carol"), ("Group", "ops")])
        assert (bad.error_code, bad.issue_timestamp, bad.token_id, bad.hmac) == (INVALID_PRINCIPAL_TYPE, -1, "", b"")
        if version >= 3:  # another owner needs CreateTokens on that User (KIP-373)
            refused = create(alice, version, owner=("User", "bob"))
            assert (refused.error_code, refused.principal_name, refused.token_requester_principal_name) == (
                AUTHORIZATION_FAILED, "bob", "alice")
            nameless = create(alice, version, owner=(None, "bob"))  # Kafka cannot build that principal
            assert (nameless.error_code, nameless.principal_name, nameless.token_requester_principal_name) == (
                UNKNOWN_SERVER_ERROR, "ANONYMOUS", "ANONYMOUS")
    with Client.to(broker) as plain:  # PLAINTEXT: no token requests at all
        r = create(plain, version)
        assert (r.error_code, r.issue_timestamp, r.expiry_timestamp, r.principal_name) == (
            NOT_ALLOWED, -1, -1, "ANONYMOUS")


def test_create_for_another_owner_with_create_tokens(broker):
    _grant(broker, CREATE_TOKENS, USER_RESOURCE, "User:dave", "User:bob")
    with login(broker, "bob") as bob:
        r = create(bob, 3, owner=("User", "dave"))
        assert r.error_code == NONE
        assert (r.principal_name, r.token_requester_principal_name) == ("dave", "bob")
    with login(broker, r.token_id, _password(r.hmac), token=True) as as_dave, login(broker, "dave") as dave:
        assert create(as_dave, 3).error_code == NOT_ALLOWED  # a token-authenticated connection
        mine = call(dave, 41, 3, owners=[{"principal_type": "User", "principal_name": "dave"}])
        assert [(t.token_id, t.principal_name, t.token_requester_principal_name) for t in mine.tokens] == [
            (r.token_id, "dave", "bob")]


@over_versions(39)
def test_renew_delegation_token(broker, version):
    with login(broker, "alice") as alice, login(broker, "carol") as carol, login(broker, "bob") as bob:
        token = create(alice, renewers=[("User", "carol")])
        r = call(carol, 39, version, hmac=token.hmac, renew_period=60_000)
        assert r.error_code == NONE
        assert token.issue_timestamp + 60_000 <= r.expiry_timestamp <= int(time.time() * 1000) + 60_000
        r = call(alice, 39, version, hmac=token.hmac, renew_period=-1)  # the broker's expiry time
        assert r.expiry_timestamp >= token.issue_timestamp + EXPIRY_MS
        assert call(bob, 39, version, hmac=token.hmac, renew_period=60_000).error_code == OWNER_MISMATCH
        unknown = call(alice, 39, version, hmac=b"\x00" * 64, renew_period=60_000)
        assert (unknown.error_code, unknown.expiry_timestamp) == (NOT_FOUND, 0)

        # a renew never passes the maximum lifetime, and past it the token is expired
        brief = create(alice, max_lifetime_ms=1500)
        r = call(alice, 39, version, hmac=brief.hmac, renew_period=60_000)
        assert (r.error_code, r.expiry_timestamp) == (NONE, brief.max_timestamp)
        wait_until(lambda: call(alice, 39, version, hmac=brief.hmac, renew_period=60_000).error_code == EXPIRED,
                   "a renew past the maximum lifetime refused", timeout=10)
    with Client.to(broker) as plain:
        r = call(plain, 39, version, hmac=token.hmac, renew_period=60_000)
        assert (r.error_code, r.expiry_timestamp) == (NOT_ALLOWED, -1)


@over_versions(40)
def test_expire_delegation_token(broker, version):
    with login(broker, "alice") as alice, login(broker, "bob") as bob:
        token = create(alice)
        assert call(bob, 40, version, hmac=token.hmac, expiry_time_period=0).error_code == OWNER_MISMATCH
        r = call(alice, 40, version, hmac=token.hmac, expiry_time_period=30_000)
        assert r.error_code == NONE
        assert r.expiry_timestamp <= int(time.time() * 1000) + 30_000
        with login(broker, token.token_id, _password(token.hmac), token=True):
            pass  # still valid for 30 s
        r = call(alice, 40, version, hmac=token.hmac, expiry_time_period=-1)  # at once: gone
        assert (r.error_code, r.expiry_timestamp) == (NONE, -1)
        assert call(alice, 40, version, hmac=token.hmac, expiry_time_period=-1).error_code == NOT_FOUND
        listed = call(alice, 41, 3, owners=None)
        assert token.token_id not in [t.token_id for t in listed.tokens]
        with pytest.raises(AssertionError, match="Authentication failed"):
            login(broker, token.token_id, _password(token.hmac), token=True)

        brief = create(alice, max_lifetime_ms=1000)
        wait_until(lambda: call(alice, 40, version, hmac=brief.hmac, expiry_time_period=60_000).error_code == EXPIRED,
                   "an expired token's expire refused", timeout=10)
        with pytest.raises(AssertionError, match="Authentication failed"):
            login(broker, brief.token_id, _password(brief.hmac), token=True)
    with Client.to(broker) as plain:
        r = call(plain, 40, version, hmac=token.hmac, expiry_time_period=-1)
        assert (r.error_code, r.expiry_timestamp) == (NOT_ALLOWED, -1)


@over_versions(41)
def test_describe_delegation_token(broker, version):
    with login(broker, "carol") as carol, login(broker, "bob") as bob:
        owned = create(carol)
        renewed_by_bob = create(carol, renewers=[("User", "bob")])
        r = call(bob, 41, version, owners=None)
        assert r.error_code == NONE
        seen = {t.token_id: t for t in r.tokens}
        assert renewed_by_bob.token_id in seen and owned.token_id not in seen
        t = seen[renewed_by_bob.token_id]
        assert (t.principal_name, t.hmac, [x.principal_name for x in t.renewers]) == (
            "carol", renewed_by_bob.hmac, ["bob"])
        assert (t.issue_timestamp, t.expiry_timestamp, t.max_timestamp) == (
            renewed_by_bob.issue_timestamp, renewed_by_bob.expiry_timestamp,
            renewed_by_bob.max_timestamp)
        if version >= 3:
            assert (t.token_requester_principal_type, t.token_requester_principal_name) == ("User", "carol")
        # owners: an empty list asks for nothing; a named owner matches owners and renewers
        assert call(bob, 41, version, owners=[]).tokens == ()
        as_renewer = call(carol, 41, version, owners=[{"principal_type": "User", "principal_name": "bob"}])
        ids = {t.token_id for t in as_renewer.tokens}  # earlier versions' tokens are there too
        assert renewed_by_bob.token_id in ids and owned.token_id not in ids
    with Client.to(broker) as plain:
        r = call(plain, 41, version, owners=None)
        assert (r.error_code, r.tokens) == (NOT_ALLOWED, ())


def test_describe_tokens_on_a_user_shows_its_tokens(broker):
    with login(broker, "carol") as carol:
        owned = create(carol)
    with login(broker, "dave") as dave:  # DescribeTokens on carol's User resource shows all of hers
        assert owned.token_id not in [t.token_id for t in call(dave, 41, 3, owners=None).tokens]
        _grant(broker, DESCRIBE_TOKENS, USER_RESOURCE, "User:carol", "User:dave")
        assert owned.token_id in [t.token_id for t in call(dave, 41, 3, owners=None).tokens]


def test_describe_one_token_by_its_acl(broker):
    with login(broker, "alice") as alice:
        token = create(alice)
    with login(broker, "bob") as bob:
        assert token.token_id not in [t.token_id for t in call(bob, 41, 3, owners=None).tokens]
        _grant(broker, DESCRIBE, DELEGATION_TOKEN_RESOURCE, token.token_id, "User:bob")
        assert token.token_id in [t.token_id for t in call(bob, 41, 3, owners=None).tokens]


def test_token_login_proves_the_owner(broker):
    with login(broker, "alice") as alice:
        token = create(alice)
    with login(broker, token.token_id, _password(token.hmac), token=True) as c:
        # the principal is alice's: describe on that connection is refused as token-authenticated
        assert call(c, 41, 3, owners=None).error_code == NOT_ALLOWED
        assert c.request(3, 1, topics=[]).brokers  # and the connection is logged in
    with pytest.raises(AssertionError, match="Authentication failed"):  # the wrong HMAC
        login(broker, token.token_id, _password(b"\x01" * 64), token=True)
    with pytest.raises(AssertionError, match="Authentication failed"):  # a token id is no user name
        login(broker, token.token_id, _password(token.hmac))


def test_tokens_survive_a_restart(broker):
    with login(broker, "alice") as alice:
        token = create(alice, renewers=[("User", "bob")])
    broker.restart()
    with login(broker, token.token_id, _password(token.hmac), token=True):
        pass
    with login(broker, "bob") as bob:
        seen = {t.token_id: t for t in call(bob, 41, 3, owners=None).tokens}
        assert seen[token.token_id].expiry_timestamp == token.expiry_timestamp
        assert call(bob, 39, 2, hmac=token.hmac, renew_period=1000).error_code == NONE


def test_a_broker_without_a_secret_key_has_no_tokens(tmp_path_factory):
    proc = _start(tmp_path_factory, "no-tokens")
    try:
        proc.start()
        with login(proc, "alice") as alice:
            r = create(alice)
            assert (r.error_code, r.principal_name, r.issue_timestamp) == (AUTH_DISABLED, "alice", 0)
            assert call(alice, 39, 2, hmac=b"x", renew_period=1).error_code == AUTH_DISABLED
            assert call(alice, 40, 2, hmac=b"x", expiry_time_period=-1).error_code == AUTH_DISABLED
            assert call(alice, 41, 3, owners=None).error_code == AUTH_DISABLED
    finally:
        proc.cleanup()
