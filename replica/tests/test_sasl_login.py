"""A follower's SASL login (replica/sasl_login.py) against the real server mechanisms of
wire/: the kio requests it sends are answered by PlainServer / ScramServer as a broker's
SaslSession would answer them; the network is the only thing left out."""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from replica.sasl_login import SaslLoginFailed, login
from wire.protocol import response_class
from wire.sasl_mechanism import SaslAuthenticationFailed
from wire.sasl_plain import PlainServer
from wire.scram import SCRAM_MECHANISMS, ScramCredential, ScramServer

ENABLED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def broker_side(password: str, mechanisms=ENABLED):
    """An exchange answering as a broker whose user `broker` has `password`."""
    state = {}

    def credential(mechanism):
        hash_name = SCRAM_MECHANISMS[mechanism][0]
        return lambda user: ScramCredential.from_password(hash_name, password, b"salt", 4096) \
            if user == "broker" else None

    async def exchange(request):
        if request.__api_key__ == 17:
            ok = request.mechanism in mechanisms
            if ok:
                state["server"] = (PlainServer(lambda u, p: (u, p) == ("broker", password))
                                   if request.mechanism == "PLAIN"
                                   else ScramServer(request.mechanism, credential(request.mechanism), "srvnonce"))
            return response_class(17, 1)(error_code=ErrorCode.none if ok else ErrorCode.unsupported_sasl_mechanism,
                                         mechanisms=mechanisms)
        try:
            reply, code, message = state["server"].step(request.auth_bytes), ErrorCode.none, None
        except SaslAuthenticationFailed as exc:
            reply, code, message = b"", ErrorCode.sasl_authentication_failed, str(exc)
        return response_class(36, 2)(error_code=code, error_message=message, auth_bytes=reply,
                                     session_lifetime=datetime.timedelta(0))
    return exchange, state


def creds(mechanism: str, password: str = "secret"):
    return SimpleNamespace(mechanism=mechanism, username="broker", password=password)


@pytest.mark.parametrize("mechanism", ENABLED)
def test_logs_in_with_each_mechanism(mechanism):
    exchange, state = broker_side("secret")
    asyncio.run(login(exchange, creds(mechanism)))
    assert state["server"].complete and state["server"].username == "broker"


@pytest.mark.parametrize("mechanism", ENABLED)
def test_a_wrong_password_is_a_failed_login(mechanism):
    exchange, _ = broker_side("secret")
    with pytest.raises(SaslLoginFailed, match="failed"):
        asyncio.run(login(exchange, creds(mechanism, "wrong")))


def test_a_mechanism_the_leader_does_not_enable_is_refused_at_the_handshake():
    exchange, _ = broker_side("secret", mechanisms=("PLAIN",))
    with pytest.raises(SaslLoginFailed, match="refused"):
        asyncio.run(login(exchange, creds("SCRAM-SHA-512")))


def test_a_leader_that_does_not_know_the_password_cannot_pass_for_one_that_does():
    exchange, state = broker_side("secret")

    async def forged(request):
        answer = await exchange(request)
        if request.__api_key__ == 36 and state["server"].complete:
            return response_class(36, 2)(error_code=ErrorCode.none, error_message=None, auth_bytes=b"v=Zm9yZ2Vk",
                                         session_lifetime=datetime.timedelta(0))
        return answer
    with pytest.raises(SaslLoginFailed, match="server"):
        asyncio.run(login(forged, creds("SCRAM-SHA-256")))
