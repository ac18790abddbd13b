"""The broker's side of authentication, made once at start-up: the mechanisms it offers, the
PLAIN users, the SCRAM credential store (with --sasl-scram-user applied), the delegation tokens
a SCRAM login may present instead, and the session each new connection on a SASL listener gets."""

from __future__ import annotations

import logging

from wire.sasl_stage import SASL_PROTOCOLS

from replica.partition import now_ms

from broker.net.request_context import RequestContext
from broker.security.cluster_scram_credentials import ClusterScramCredentials
from broker.security.delegation_token_manager import DelegationTokenManager
from broker.security.sasl_credentials import PlainUsers, ScramCredentialStore, parse_add_scram
from broker.security.token_store import TokenStore
from broker.security.sasl_session import SaslSession
from broker.settings.security_config import listeners_of

log = logging.getLogger(__name__)


class BrokerSecurity:
    def __init__(self, config) -> None:
        security = config.security
        self.enabled_mechanisms = tuple(security.sasl_enabled_mechanisms)
        self.plain_users = PlainUsers.from_file(security.sasl_plain_users)
        # A cluster member replaces this store with etcd's (cluster_scram_credentials.py) and
        # applies --sasl-scram-user there once it has joined.
        self.scram: ScramCredentialStore | ClusterScramCredentials = ScramCredentialStore(config.data_dir)
        for spec in security.sasl_scram_users if config.etcd is None else ():
            mechanism, name, password, iterations = parse_add_scram(spec)
            self.scram.set_password(mechanism, name, password, iterations)
        # A cluster member replaces the store with etcd's (cluster_token_store.py).
        self.tokens = DelegationTokenManager(config.delegation_tokens, TokenStore(config.data_dir), now_ms)
        if any(l.security_protocol in SASL_PROTOCOLS for l in listeners_of(config)):
            log.info("SASL mechanisms %s; %d PLAIN users, %d SCRAM users", ", ".join(self.enabled_mechanisms),
                     len(self.plain_users), len(self.scram.describe()))

    def context_for(self, listener, peer: str) -> RequestContext:
        """A new connection's context; on a SASL listener it starts unauthenticated."""
        context = RequestContext(listener, peer)
        if listener.security_protocol in SASL_PROTOCOLS:
            context.session = SaslSession(self, context)
        return context
