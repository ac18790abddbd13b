"""Every advertised version of the SASL and SCRAM-credential APIs, over a raw socket:
SaslHandshake v0-1 and SaslAuthenticate v0-2 on a SASL_PLAINTEXT listener (PLAIN and a whole
SCRAM-SHA-512 exchange; v0's bare tokens after a v0 handshake) and on a PLAINTEXT one
(ILLEGAL_SASL_STATE, as Kafka's KafkaApis); DescribeUserScramCredentials and
AlterUserScramCredentials v0 with Kafka's per-user errors, and a user added through
AlterUserScramCredentials logging in with the password the salted one came from."""

from __future__ import annotations

import hashlib
import struct

import pytest

from compat_tests.helpers.broker_process import BrokerProcess, free_port
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from wire.sasl_plain import plain_client_token
from wire.scram import ScramClient

NONE, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 0, 33, 34, 58
RESOURCE_NOT_FOUND, DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL = 91, 92, 93
SHA256, SHA512 = 1, 2


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    users = tmp_path_factory.mktemp("sasl-versions") / "users.jaas"
    users.write_text('user_alice="alice-secret";\n')
    sasl_port, plain_port = free_port(), free_port()
    proc = BrokerProcess(port=plain_port, extra_args=[
        "--listeners", f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "--sasl-plain-users", str(users), "--sasl-scram-user", "SCRAM-SHA-512=[name=bob,password=bob-secret]"])
    proc.sasl_port = sasl_port
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def _sasl(broker) -> Client:
    return Client("127.0.0.1", broker.sasl_port)


@over_versions(17)
def test_sasl_handshake(broker, version):
    with _sasl(broker) as c:
        r = c.request(17, version, mechanism="GSSAPI")
        assert r.error_code == UNSUPPORTED_SASL_MECHANISM
        assert set(r.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    with _sasl(broker) as c:
        assert c.request(17, version, mechanism="PLAIN").error_code == NONE
    with Client.to(broker) as c:  # PLAINTEXT: nothing to authenticate
        assert c.request(17, version, mechanism="PLAIN").error_code == ILLEGAL_SASL_STATE


def test_handshake_v0_then_bare_tokens(broker):
    with _sasl(broker) as c:
        assert c.request(17, 0, mechanism="PLAIN").error_code == NONE
        token = plain_client_token("alice", "alice-secret")
        c.sock.sendall(struct.pack(">i", len(token)) + token)
        assert c.sock.recv(4) == b"\x00\x00\x00\x00"  # an empty server token
        assert c.request(3, 1, topics=[]).brokers  # authenticated: Metadata is answered


@over_versions(36)
def test_sasl_authenticate(broker, version):
    with _sasl(broker) as c:
        assert c.request(17, 1, mechanism="PLAIN").error_code == NONE
        r = c.request(36, version, auth_bytes=plain_client_token("alice", "alice-secret"))
        assert (r.error_code, r.auth_bytes) == (NONE, b"")
        if version >= 1:
            assert r.session_lifetime.total_seconds() == 0  # no re-authentication
        assert c.request(36, version, auth_bytes=b"again").error_code == ILLEGAL_SASL_STATE
    with _sasl(broker) as c:  # a whole SCRAM-SHA-512 exchange
        assert c.request(17, 1, mechanism="SCRAM-SHA-512").error_code == NONE
        scram = ScramClient("SCRAM-SHA-512", "bob", "bob-secret", "raw-client-nonce")
        first = c.request(36, version, auth_bytes=scram.first())
        final = c.request(36, version, auth_bytes=scram.final(first.auth_bytes))
        assert final.error_code == NONE
        scram.verify(final.auth_bytes)
    with _sasl(broker) as c:
        assert c.request(17, 1, mechanism="PLAIN").error_code == NONE
        r = c.request(36, version, auth_bytes=plain_client_token("alice", "wrong"))
        assert r.error_code == SASL_AUTHENTICATION_FAILED and "Invalid username or password" in r.error_message
        assert c.sock.recv(1) == b""  # then closed


def _describe(c, users):
    r = c.request(50, 0, users=None if users is None else [{"name": u} for u in users])
    assert r.error_code == NONE
    return {x.user: (x.error_code, sorted((i.mechanism, i.iterations) for i in x.credential_infos)) for x in r.results}


@over_versions(50)
def test_describe_user_scram_credentials(broker, version):
    with Client.to(broker) as c:
        assert _describe(c, None)["bob"] == (NONE, [(SHA512, 4096)])
        got = _describe(c, ["bob", "nobody", "twice", "twice"])
        assert got == {"bob": (NONE, [(SHA512, 4096)]), "nobody": (RESOURCE_NOT_FOUND, []),
                       "twice": (DUPLICATE_RESOURCE, [])}


def _upsert(name, mechanism=SHA256, iterations=4096, password="carol-secret", salt=b"0123456789abcdef"):
    hash_name = {SHA256: "sha256", SHA512: "sha512"}.get(mechanism, "sha256")
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


@over_versions(51)
def test_alter_user_scram_credentials(broker, version):
    with Client.to(broker) as c:
        r = c.request(51, version, deletions=[{"name": "ghost", "mechanism": SHA256}, {"name": "dup", "mechanism": SHA256}],
                      upsertions=[_upsert("carol"), _upsert("few", iterations=1000), _upsert("many", iterations=20000),
                                  _upsert("odd", mechanism=9), _upsert("dup")])
        assert {x.user: x.error_code for x in r.results} == {
            "carol": NONE, "ghost": RESOURCE_NOT_FOUND, "dup": DUPLICATE_RESOURCE,
            "few": UNACCEPTABLE_CREDENTIAL, "many": UNACCEPTABLE_CREDENTIAL, "odd": UNSUPPORTED_SASL_MECHANISM}
        assert _describe(c, ["carol"])["carol"] == (NONE, [(SHA256, 4096)])
        assert "few" not in _describe(c, None)
    with _sasl(broker) as s:  # carol logs in with the password her salted one came from
        assert s.request(17, 1, mechanism="SCRAM-SHA-256").error_code == NONE
        scram = ScramClient("SCRAM-SHA-256", "carol", "carol-secret", "nonce-of-carol")
        first = s.request(36, 1, auth_bytes=scram.first())
        final = s.request(36, 1, auth_bytes=scram.final(first.auth_bytes))
        assert final.error_code == NONE
    with Client.to(broker) as c:
        r = c.request(51, version, deletions=[{"name": "carol", "mechanism": SHA256}], upsertions=[])
        assert [(x.user, x.error_code) for x in r.results] == [("carol", NONE)]
        assert _describe(c, ["carol"])["carol"][0] == RESOURCE_NOT_FOUND
    text = (broker.data_dir / "scram-credentials.json").read_text()
    assert "bob-secret" not in text and "carol-secret" not in text
