"""SCRAM against the RFCs' own exchanges: RFC 5802 section 5 (SHA-1) and RFC 7677 section 3
(SHA-256), byte for byte, from both sides; then what Kafka's mechanisms must refuse."""

from __future__ import annotations

import base64

import pytest

from wire.sasl_mechanism import SaslAuthenticationFailed
from wire.scram import ScramClient, ScramCredential, ScramServer

# (hash, client nonce, server nonce part, salt, client-first, server-first, client-final, server-final)
RFC_EXCHANGES = {
    "RFC 5802 SCRAM-SHA-1": (
        "sha1", "fyko+d2lbbFgONRv9qkxdawL", "3rfcNHYJY1ZVvWVs7j", "QSXCR+Q6sek8bf92",
        b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
    ),
    "RFC 7677 SCRAM-SHA-256": (
        "sha256", "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "W22ZaJ0SNY7soEsUEjb6gQ==",
        b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    ),
}


def _server(hash_name, snonce, salt, password="pencil", mechanism="SCRAM-SHA-256"):
    cred = ScramCredential.from_password(hash_name, password, base64.b64decode(salt), 4096)
    return ScramServer(mechanism, {"user": cred}.get, snonce, hash_name=hash_name)


@pytest.mark.parametrize("name", RFC_EXCHANGES)
def test_server_replays_the_rfc_exchange(name):
    hash_name, _cnonce, snonce, salt, c1, s1, c2, s2 = RFC_EXCHANGES[name]
    server = _server(hash_name, snonce, salt)
    assert server.step(c1) == s1
    assert not server.complete
    assert server.step(c2) == s2
    assert server.complete and server.username == "user"


@pytest.mark.parametrize("name", RFC_EXCHANGES)
def test_client_replays_the_rfc_exchange(name):
    hash_name, cnonce, _snonce, _salt, c1, s1, c2, s2 = RFC_EXCHANGES[name]
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", cnonce, hash_name=hash_name)
    assert client.first() == c1
    assert client.final(s1) == c2
    client.verify(s2)
    with pytest.raises(SaslAuthenticationFailed):
        client.verify(b"v=" + base64.b64encode(b"\0" * 32))


@pytest.mark.parametrize("name", RFC_EXCHANGES)
def test_wrong_password_is_refused_with_kafkas_message(name):
    hash_name, _cnonce, snonce, salt, c1, s1, c2, _s2 = RFC_EXCHANGES[name]
    server = _server(hash_name, snonce, salt, password="not-pencil")
    assert server.step(c1) == s1  # the salt and iterations are the user's, the proof cannot match
    with pytest.raises(SaslAuthenticationFailed, match="invalid credentials"):
        server.step(c2)
    assert not server.complete


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_mechanisms_round_trip(mechanism):
    cred = ScramCredential.from_password({"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism],
                                         "s3cret", b"0123456789abcdef", 4096)
    server = ScramServer(mechanism, {"a,b=c": cred}.get, "SERVERNONCE")
    client = ScramClient(mechanism, "a,b=c", "s3cret", "clientnonce")
    assert b"n=a=2Cb=3Dc," in client.first()  # saslname escaping, undone by the server
    client.verify(server.step(client.final(server.step(client.first()))))
    assert server.complete and server.username == "a,b=c"


def test_unknown_user_channel_binding_and_replayed_nonce_are_refused():
    hash_name, _c, snonce, salt, c1, _s1, c2, _s2 = RFC_EXCHANGES["RFC 7677 SCRAM-SHA-256"]
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        ScramServer("SCRAM-SHA-256", {}.get, snonce).step(c1)
    with pytest.raises(SaslAuthenticationFailed, match="channel binding"):
        _server(hash_name, snonce, salt).step(b"p=tls-unique,," + c1[3:])
    server = _server(hash_name, "another-server-nonce", salt)
    server.step(c1)
    with pytest.raises(SaslAuthenticationFailed, match="nonce"):
        server.step(c2)  # the RFC's proof was for the RFC's server nonce
    with pytest.raises(SaslAuthenticationFailed):
        _server(hash_name, snonce, salt).step(b"\xff\xfe")


def test_the_credential_keeps_neither_password_nor_salted_password():
    cred = ScramCredential.from_password("sha256", "pencil", b"salt", 4096)
    assert b"pencil" not in repr(cred).encode()
    assert set(vars(cred) if hasattr(cred, "__dict__") else cred.__dataclass_fields__) == {
        "salt", "stored_key", "server_key", "iterations"}


def test_a_tokenauth_login_proves_the_tokens_owner():
    """KIP-48: user name = token id, password = the HMAC in base64, extension tokenauth=true;
    the server asks its token lookup, never the user credentials, and proves the owner."""
    cred = ScramCredential.from_password("sha256", "aG1hYw==", b"0123456789abcdef", 4096)
    tokens = {"token-1": (cred, "alice")}
    server = ScramServer("SCRAM-SHA-256", {"token-1": cred}.get, "SNONCE", token_lookup=tokens.get)
    client = ScramClient("SCRAM-SHA-256", "token-1", "aG1hYw==", "cnonce", extensions={"tokenauth": "true"})
    assert client.first() == b"n,,n=token-1,r=cnonce,tokenauth=true"
    client.verify(server.step(client.final(server.step(client.first()))))
    assert (server.complete, server.username, server.token_authenticated) == (True, "alice", True)
    # without the extension the same id is a user name: here a user of that name, no token
    plain = ScramServer("SCRAM-SHA-256", {"token-1": cred}.get, "SNONCE", token_lookup=tokens.get)
    plain.step(b"n,,n=token-1,r=cnonce")
    assert plain.token_authenticated is False


def test_token_logins_are_refused_without_a_token_and_extensions_are_checked():
    first = b"n,,n=token-1,r=cnonce,tokenauth=true"
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        ScramServer("SCRAM-SHA-256", {}.get, "S", token_lookup={}.get).step(first)  # no such token
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        ScramServer("SCRAM-SHA-256", {}.get, "S").step(first)  # a server that takes no tokens
    with pytest.raises(SaslAuthenticationFailed, match="bad extension"):
        ScramServer("SCRAM-SHA-256", {}.get, "S").step(b"n,,n=u,r=cnonce,token-auth=true")
    cred = ScramCredential.from_password("sha256", "p", b"salt", 4096)
    server = ScramServer("SCRAM-SHA-256", {"u": cred}.get, "S")
    assert server.step(b"n,,n=u,r=cnonce,other=x").startswith(b"r=cnonceS")  # unknown ones ignored, as Kafka
