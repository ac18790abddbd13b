"""TLS settings to server contexts (broker/security/tls_config.py) and the SSL principal
(broker/tls_listener.certificate_principal), with real certificates and a real TLS handshake
over memory BIOs."""

from __future__ import annotations

import ssl

import pytest

from broker.net.listeners import Listener
from broker.security.self_signed_tls import make_tls_files
from broker.security.tls_config import ServerTlsContexts, TlsConfig, TlsSetupError
from broker.net.tls_listener import certificate_principal


def _listener(name: str, protocol: str) -> Listener:
    return Listener(name, "127.0.0.1", 0, protocol, "127.0.0.1", 0)


SSL_L, SASL_SSL_L, PLAIN_L = _listener("SSL", "SSL"), _listener("SASL_SSL", "SASL_SSL"), _listener("P", "PLAINTEXT")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("tls"), clients=[("alice, admin", "eng+ops")])


def _config(files, **kw) -> TlsConfig:
    return TlsConfig(keystore_location=files.broker_cert, key_location=files.broker_key,
                     truststore_location=files.ca, **kw)


def test_client_auth_applies_to_ssl_listeners_and_a_listener_of_its_own_wins():
    tls = TlsConfig(client_auth="required", listener_client_auth=(("SASL_SSL", "requested"),))
    assert tls.client_auth_for(SSL_L) == "required"
    assert tls.client_auth_for(SASL_SSL_L) == "requested"
    assert TlsConfig(client_auth="required").client_auth_for(SASL_SSL_L) == "none"  # KIP-684


def test_contexts_per_listener(files):
    contexts = ServerTlsContexts.load(_config(files, client_auth="required"), [SSL_L, SASL_SSL_L, PLAIN_L])
    assert contexts.context_for(SSL_L).verify_mode == ssl.CERT_REQUIRED
    assert contexts.context_for(SASL_SSL_L).verify_mode == ssl.CERT_NONE
    assert contexts.context_for(PLAIN_L) is None


@pytest.mark.parametrize("change, message", [
    (dict(keystore_location=None), "needs --ssl-keystore-location"),
    (dict(key_location=None), "cannot load the broker's certificate"),  # broker.pem holds no key
    (dict(truststore_location=None, client_auth="requested"), "needs --ssl-truststore-location"),
])
def test_bad_settings_are_one_clear_error(files, change, message):
    from dataclasses import replace
    with pytest.raises(TlsSetupError, match=message):
        ServerTlsContexts.load(replace(_config(files), **change), [SSL_L])


def test_a_key_that_is_not_the_certificates_is_refused(files):
    tls = TlsConfig(keystore_location=files.broker_cert, key_location=files.client_key("alice, admin"))
    with pytest.raises(TlsSetupError, match="cannot load"):
        ServerTlsContexts.load(tls, [SSL_L])


class _Transport:
    def __init__(self, ssl_object) -> None:
        self._ssl_object = ssl_object

    def get_extra_info(self, name):
        return self._ssl_object if name == "ssl_object" else None


def _handshake(server_context: ssl.SSLContext, client_context: ssl.SSLContext) -> ssl.SSLObject:
    """A real TLS handshake between two SSLObjects over memory BIOs; the server's side."""
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = server_context.wrap_bio(s_in, s_out, server_side=True)
    client = client_context.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = {server: False, client: False}
    for _ in range(10):
        for side in (client, server):
            if not done[side]:
                try:
                    side.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            break
    client.write(b"x")  # TLS 1.3: the client's certificate is checked by the time data flows
    s_in.write(c_out.read())
    assert server.read(1) == b"x"
    return server


def test_principal_is_the_rfc2253_subject_of_the_client_certificate(files):
    server = ServerTlsContexts.load(_config(files, client_auth="requested"), [SSL_L]).context_for(SSL_L)
    client = ssl.create_default_context(cafile=str(files.ca))
    assert certificate_principal(_Transport(_handshake(server, client))) is None  # no certificate sent
    client.load_cert_chain(files.client_cert("alice, admin"), files.client_key("alice, admin"))
    principal = certificate_principal(_Transport(_handshake(server, client)))
    assert principal == r"User:CN=alice\, admin,OU=eng\+ops,O=twinlog"
