"""TLS for SSL and SASL_SSL listeners: Kafka's ssl.* settings as PEM files, and the
stdlib SSLContext each listener serves with.

Kafka's names and what they are here (keystores and truststores are PEM files only, which is
what kafka-clients calls ssl.keystore.type=PEM / ssl.truststore.type=PEM):

    ssl.keystore.location      --ssl-keystore-location   the broker's certificate chain, PEM (leaf
                               first); may also hold its private key (one combined PEM file)
    ssl.keystore.key           --ssl-key-location        the private key, PEM, when it is a file of
                               its own (librdkafka's ssl.key.location) [default: in the keystore]
    ssl.key.password           --ssl-key-password        for an encrypted private key
    ssl.truststore.location    --ssl-truststore-location the CA certificate(s), PEM, that client
                               certificates must chain to (needed for ssl.client.auth)
    ssl.client.auth            --ssl-client-auth         none | requested | required, for SSL
                               listeners [default: none]
    listener.name.N.ssl.client.auth  --listener-ssl-client-auth N=VALUE   one listener's own
                               setting; as in Kafka (KIP-684) the broker-wide one does not
                               apply to SASL_SSL listeners, a listener's own does
    ssl.enabled.protocols      TLSv1.2 and TLSv1.3 (fixed: Kafka's default)

Everything is loaded once, before the ports open (listener_sockets.py): a missing file, a key
that does not match its certificate or a wrong key password stops the start with one line.

A broker whose inter-broker listener is SSL / SASL_SSL fetches from its peers over TLS with the
same files, as a Kafka broker does (client_context): it trusts the truststore (the system's CAs
without one), checks the peer's advertised host against its certificate (Kafka's
ssl.endpoint.identification.algorithm=https) and presents its own certificate, so a peer whose
listener requires client certificates accepts it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


class TlsSetupError(ValueError):
    """The TLS files or settings cannot make a server context; the message says which."""


@dataclass(frozen=True)
class TlsConfig:
    keystore_location: Path | None = None
    key_location: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    truststore_location: Path | None = None
    client_auth: str = "none"
    listener_client_auth: tuple[tuple[str, str], ...] = ()  # (listener name, none|requested|required)

    def client_auth_for(self, listener) -> str:
        own = dict(self.listener_client_auth).get(listener.name)
        if own is not None:
            return own
        return self.client_auth if listener.security_protocol == "SSL" else "none"


class ServerTlsContexts:
    """One SSLContext per ssl.client.auth value in use, shared by the listeners that use it."""

    def __init__(self, contexts: dict) -> None:
        self._contexts = contexts  # listener name -> SSLContext

    @classmethod
    def load(cls, tls: TlsConfig, listeners) -> "ServerTlsContexts":
        """Raises TlsSetupError. Listeners other than SSL / SASL_SSL get no context."""
        by_auth: dict[str, ssl.SSLContext] = {}
        contexts = {}
        for listener in listeners:
            if listener.security_protocol not in TLS_PROTOCOLS:
                continue
            auth = tls.client_auth_for(listener)
            if auth not in by_auth:
                by_auth[auth] = _server_context(tls, auth, listener.name)
            contexts[listener.name] = by_auth[auth]
        return cls(contexts)

    def context_for(self, listener) -> ssl.SSLContext | None:
        return self._contexts.get(listener.name)


def client_context(tls: TlsConfig) -> ssl.SSLContext:
    """This broker's TLS when it connects to a peer's SSL / SASL_SSL inter-broker listener."""
    context = ssl.create_default_context(cafile=tls.truststore_location)
    if tls.keystore_location is not None:
        context.load_cert_chain(tls.keystore_location, tls.key_location, password=tls.key_password)
    return context


def _server_context(tls: TlsConfig, client_auth: str, listener_name: str) -> ssl.SSLContext:
    if tls.keystore_location is None:
        raise TlsSetupError(f"listener {listener_name} is SSL / SASL_SSL: it needs --ssl-keystore-location "
                            f"(the broker's certificate chain, PEM)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(tls.keystore_location, tls.key_location, password=tls.key_password)
    except (OSError, ssl.SSLError) as exc:
        key = f" with key {tls.key_location}" if tls.key_location else ""
        raise TlsSetupError(f"cannot load the broker's certificate {tls.keystore_location}{key}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    context.verify_mode = CLIENT_AUTH[client_auth]
    if client_auth != "none":
        if tls.truststore_location is None:
            raise TlsSetupError(f"ssl.client.auth={client_auth} on listener {listener_name} needs "
                                f"--ssl-truststore-location (the CA PEM client certificates chain to)")
        try:
            context.load_verify_locations(cafile=tls.truststore_location)
        except (OSError, ssl.SSLError) as exc:
            raise TlsSetupError(f"cannot load the truststore {tls.truststore_location}: "
                                f"{getattr(exc, 'strerror', None) or exc}") from None
    return context
