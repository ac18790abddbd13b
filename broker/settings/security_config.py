"""The broker's security settings (listeners, SASL, TLS), one frozen value inside BrokerConfig.

Kafka's names and where they live here:

    listeners, advertised.listeners,           --listeners, --advertised-listeners,
    listener.security.protocol.map,            --listener-security-protocol-map,
    inter.broker.listener.name                 --inter-broker-listener-name (listeners.py)
    sasl.enabled.mechanisms                    --sasl-enabled-mechanisms (default: PLAIN,
                                               SCRAM-SHA-256, SCRAM-SHA-512)
    PlainLoginModule user_NAME="PASSWORD"      --sasl-plain-users FILE (a Kafka JAAS file works as is)
    kafka-storage format --add-scram ...       --sasl-scram-user 'SCRAM-SHA-256=[name=N,password=P]'
                                               (repeatable; salted and stored at start-up)
    sasl.mechanism.inter.broker.protocol       --inter-broker-sasl-mechanism
    the broker's own JAAS username / password  --inter-broker-sasl-username / -password
    connections.max.reauth.ms                  0: no re-authentication (session_lifetime_ms 0)

    ssl.keystore.location, ssl.truststore.location, ssl.client.auth, ...   --ssl-* (tls_config.py)

ACLs read their settings from here too, once they exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from broker.net.listeners import Listener, default_listener, inter_broker_listener
from broker.security.tls_config import TlsConfig


@dataclass(frozen=True)
class InterBrokerLogin:
    mechanism: str
    username: str
    password: str


@dataclass(frozen=True)
class SecurityConfig:
    """Built by security_options.security_config from the settings table's values."""

    listeners: tuple[Listener, ...]  # empty: one PLAINTEXT listener on BrokerConfig.host/port
    inter_broker_listener_name: str | None  # None: the first listener
    sasl_enabled_mechanisms: tuple[str, ...]
    sasl_plain_users: Path | None
    sasl_scram_users: tuple[str, ...]  # kafka-storage's --add-scram syntax
    inter_broker_login: InterBrokerLogin | None
    tls: TlsConfig


def listeners_of(config) -> tuple[Listener, ...]:
    """The broker's listeners: --listeners, else --host/--port as one PLAINTEXT listener."""
    return config.security.listeners or (default_listener(config.host, config.port, config.advertised_host),)


def inter_broker_of(config) -> Listener:
    return inter_broker_listener(listeners_of(config), config.security.inter_broker_listener_name)
