"""Delegation tokens with kafka-clients 4.3.0: its Admin creates, describes, renews and expires a
token (java/TokenCheck.java), and its producer logs in with SCRAM + tokenauth=true using that
token, produces, and is refused once the token is expired or has expired; an Admin logged in
with the token may not ask for another (UnsupportedByAuthenticationException, Kafka's
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).

One broker for the module (segment layout: tokens do not touch storage) with one
SASL_PLAINTEXT listener, SCRAM users alice and bob, and delegation.token.secret.key set.
"""

from __future__ import annotations

import time
import uuid

import pytest

from compat_tests.helpers.broker_process import BrokerProcess, free_port
from compat_tests.helpers.java_client import JavaClient, JavaOpError, b64, unb64
from compat_tests.helpers.waiting import wait_until

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


class TokenClient(JavaClient):
    main_class = "TokenCheck"


@pytest.fixture(scope="module")
def broker():
    port = free_port()
    proc = BrokerProcess(port=port, extra_args=[
        "--listeners", f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "--sasl-scram-user", "SCRAM-SHA-512=[name=alice,password=alice-secret]",
        "--sasl-scram-user", "SCRAM-SHA-256=[name=bob,password=bob-secret]",
        "--delegation-token-secret-key", "the-cluster-token-key"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(scope="module")
def admin(broker):
    client = TokenClient(broker.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def java(broker):
    client = JavaClient(broker.bootstrap)
    yield client
    client.close()


def user(name: str, mechanism: str = "SCRAM-SHA-512") -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{SCRAM} required username="{name}" password="{name}-secret";'}


def with_token(token: dict, mechanism: str = "SCRAM-SHA-256") -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{SCRAM} required username="{token["tokenId"]}" password="{token["hmac"]}" '
                                f'tokenauth="true";'}


def produce(java, token: dict, topic: str, values: list[bytes]) -> list[dict]:
    return java.call("produce", topic=topic, config={"acks": "all", "max.block.ms": "15000", **with_token(token)},
                     records=[{"partition": 0, "timestamp": None, "key": None, "value": b64(v), "headers": []}
                              for v in values])


def test_admin_creates_describes_renews_and_expires_a_token(admin, java):
    before = int(time.time() * 1000)
    token = admin.call("createToken", config=user("alice"), renewers=["User:bob"], maxLifetimeMs=3_600_000)
    assert (token["owner"], token["requester"], token["renewers"]) == ("User:alice", "User:alice", ["User:bob"])
    assert before <= token["issue"] and token["max"] == token["issue"] + 3_600_000
    assert token["expiry"] == token["issue"] + 24 * 3600 * 1000 or token["expiry"] == token["max"]

    seen = {t["tokenId"]: t for t in admin.call("describeTokens", config=user("bob", "SCRAM-SHA-256"))}
    assert seen[token["tokenId"]] == token  # bob renews it, so he sees it, HMAC and all

    expiry = admin.call("renewToken", config=user("bob", "SCRAM-SHA-256"), hmac=token["hmac"], periodMs=120_000)
    assert token["issue"] + 120_000 <= expiry <= int(time.time() * 1000) + 120_000

    topic = f"token-{uuid.uuid4().hex[:8]}"
    acks = produce(java, token, topic, [b"one", b"two", b"three"])
    assert [a.get("offset") for a in acks] == [0, 1, 2], acks
    got = java.call("consume", topic=topic, count=3, seek="beginning", partitions=[0], timeoutMs=20000,
                    config=with_token(token, "SCRAM-SHA-512"))
    assert [unb64(r["value"]) for r in got["records"]] == [b"one", b"two", b"three"]

    with pytest.raises(JavaOpError, match="UnsupportedByAuthenticationException"):
        admin.call("createToken", config=with_token(token), renewers=[])  # a token begets no token

    assert admin.call("expireToken", config=user("alice"), hmac=token["hmac"], periodMs=-1) == -1
    assert token["tokenId"] not in [t["tokenId"] for t in admin.call("describeTokens", config=user("alice"))]
    refused = produce(java, token, topic, [b"four"])
    assert "SaslAuthenticationException" in refused[0].get("error", ""), refused


def test_a_producer_is_refused_once_its_token_has_expired(admin, java):
    token = admin.call("createToken", config=user("alice"), renewers=[])
    topic = f"token-expiry-{uuid.uuid4().hex[:8]}"
    assert [a.get("offset") for a in produce(java, token, topic, [b"in time"])] == [0]
    expiry = admin.call("expireToken", config=user("alice"), hmac=token["hmac"], periodMs=1000)
    assert expiry <= int(time.time() * 1000) + 1000
    wait_until(lambda: "SaslAuthenticationException" in produce(java, token, topic, [b"late"])[0].get("error", ""),
               "a producer with an expired token refused", timeout=60)
    with pytest.raises(JavaOpError, match="DelegationTokenExpiredException"):
        admin.call("renewToken", config=user("alice"), hmac=token["hmac"], periodMs=60_000)
