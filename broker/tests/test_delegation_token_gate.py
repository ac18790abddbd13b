"""Kafka's KafkaApis.allowTokenRequests: which connections may use the token APIs at all."""

from __future__ import annotations

import pytest

from broker.handlers.delegation_token_gate import token_requests_allowed
from broker.net.listeners import Listener
from broker.net.request_context import ANONYMOUS, RequestContext, current_request


@pytest.mark.parametrize("protocol, principal, by_token, allowed", [
    ("PLAINTEXT", ANONYMOUS, False, False),
    ("SSL", ANONYMOUS, False, False),  # one-way TLS: no client certificate
    ("SSL", "User:CN=client", False, True),  # a client certificate's subject
    ("SASL_PLAINTEXT", "User:alice", False, True),
    ("SASL_SSL", "User:alice", False, True),
    ("SASL_PLAINTEXT", "User:alice", True, False),  # logged in with a token
    ("SASL_SSL", "User:alice", True, False),
])
def test_who_may_ask_for_tokens(protocol, principal, by_token, allowed):
    listener = Listener("L", "127.0.0.1", 9092, protocol, "127.0.0.1", 9092)
    context = RequestContext(listener, "127.0.0.1:5000", principal, token_authenticated=by_token)
    token = current_request.set(context)
    try:
        assert token_requests_allowed() is allowed
    finally:
        current_request.reset(token)
