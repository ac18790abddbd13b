from __future__ import annotations

import pytest

from wire.sasl_mechanism import SaslAuthenticationFailed
from wire.sasl_plain import PlainServer, plain_client_token

USERS = {"alice": "alice-secret"}


def _server():
    return PlainServer(lambda u, p: USERS.get(u) == p)


def test_plain_accepts_the_right_password_once():
    server = _server()
    assert server.step(plain_client_token("alice", "alice-secret")) == b""
    assert server.complete and server.username == "alice"
    with pytest.raises(SaslAuthenticationFailed):
        server.step(plain_client_token("alice", "alice-secret"))


@pytest.mark.parametrize("token, message", [
    (plain_client_token("alice", "wrong"), "Invalid username or password"),
    (plain_client_token("bob", "alice-secret"), "Invalid username or password"),
    (b"alice\x00alice\x00alice-secret", None),  # authzid equal to the username: accepted
    (b"bob\x00alice\x00alice-secret", "authorization id"),
    (b"\x00alice", "expected 3 tokens"),
    (b"\x00\x00pw", "username not specified"),
    (b"\x00alice\x00", "password not specified"),
    (b"\x00\xff\x00x", "expected 3 tokens"),
])
def test_plain_refusals(token, message):
    server = _server()
    if message is None:
        server.step(token)
        assert server.complete
        return
    with pytest.raises(SaslAuthenticationFailed, match=message):
        server.step(token)
    assert not server.complete and server.username is None
