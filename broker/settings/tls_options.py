"""`twinlog serve`'s TLS settings, checked together: the options are declared in the settings
table (table.py) under Kafka's ssl.* names; what each means and the PEM mapping are
in tls_config.py."""

from __future__ import annotations

import click

from broker.security.tls_config import CLIENT_AUTH, TlsConfig


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
