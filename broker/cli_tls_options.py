"""`twinlog serve`'s TLS options (issue 17), named after Kafka's ssl.* settings; what each means
and the PEM mapping are in tls_config.py."""

from __future__ import annotations

from pathlib import Path

import click

from .tls_config import CLIENT_AUTH, TlsConfig

_PEM = click.Path(exists=True, dir_okay=False, path_type=Path)
_AUTH = click.Choice(list(CLIENT_AUTH), case_sensitive=False)

TLS_OPTIONS = [
    click.option("--ssl-keystore-location", type=_PEM, default=None,
                 help="SSL / SASL_SSL listeners: the broker's certificate chain, PEM, leaf first; may hold "
                      "the private key too (ssl.keystore.location, ssl.keystore.type=PEM)."),
    click.option("--ssl-key-location", type=_PEM, default=None,
                 help="The broker's private key, PEM, if not in the keystore file."),
    click.option("--ssl-key-password", default=None, help="Password of an encrypted private key (ssl.key.password)."),
    click.option("--ssl-truststore-location", type=_PEM, default=None,
                 help="CA certificates, PEM, that client certificates must chain to (ssl.truststore.location)."),
    click.option("--ssl-client-auth", type=_AUTH, default="none", show_default=True,
                 help="Client certificates on SSL listeners (ssl.client.auth); the subject DN is the principal."),
    click.option("--listener-ssl-client-auth", "listener_ssl_client_auth", multiple=True, metavar="NAME=VALUE",
                 help="One listener's ssl.client.auth (listener.name.NAME.ssl.client.auth), SASL_SSL ones "
                      "included; repeatable."),
]


def tls_config(ssl_keystore_location, ssl_key_location, ssl_key_password, ssl_truststore_location,
               ssl_client_auth, listener_ssl_client_auth) -> TlsConfig:
    """Raises click.UsageError (one line, exit code 2) for a malformed per-listener setting."""
    per_listener = []
    for item in listener_ssl_client_auth:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or value.strip().lower() not in CLIENT_AUTH:
            raise click.UsageError(f"--listener-ssl-client-auth {item!r} is not NAME=none|requested|required")
        per_listener.append((name.strip().upper(), value.strip().lower()))
    return TlsConfig(keystore_location=ssl_keystore_location, key_location=ssl_key_location,
                     key_password=ssl_key_password, truststore_location=ssl_truststore_location,
                     client_auth=ssl_client_auth.lower(), listener_client_auth=tuple(per_listener))
