"""`twinlog serve`'s listener and SASL options (issue 17), named after Kafka's settings; what
each means is in security_config.py. Kept apart from cli.py so that file only applies them."""

from __future__ import annotations

from pathlib import Path

import click

from .listeners import DEFAULT_PROTOCOL_MAP, InvalidListeners, inter_broker_listener, parse_listeners
from .sasl_credentials import InvalidCredentialSpec, parse_add_scram
from .cli_tls_options import TLS_OPTIONS, tls_config
from .security_config import InterBrokerLogin, SecurityConfig

_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"

_OPTIONS = [
    click.option("--listeners", default=None, metavar="NAME://HOST:PORT,...",
                 help="Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://:9093 "
                      "(overrides --host/--port) [default: PLAINTEXT://--host:--port]."),
    click.option("--advertised-listeners", default=None, metavar="NAME://HOST:PORT,...",
                 help="What Metadata names for clients of each listener [default: the listener's own address]."),
    click.option("--listener-security-protocol-map", default=DEFAULT_PROTOCOL_MAP, show_default=True,
                 metavar="NAME:PROTOCOL,...", help="Each listener's security protocol."),
    click.option("--inter-broker-listener-name", default=None,
                 help="The listener brokers fetch from each other on [default: the first listener]."),
    click.option("--sasl-enabled-mechanisms", default=_MECHANISMS, show_default=True,
                 help="SASL mechanisms offered on SASL listeners (sasl.enabled.mechanisms)."),
    click.option("--sasl-plain-users", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                 help='PLAIN users: a file with user_NAME="PASSWORD" entries (Kafka\'s PlainLoginModule JAAS '
                      "section works as is)."),
    click.option("--sasl-scram-user", "sasl_scram_users", multiple=True, metavar="SCRAM-SHA-256=[name=N,password=P]",
                 help="Add or replace a SCRAM user at start-up, salted and stored in the data dir "
                      "(kafka-storage format --add-scram syntax); repeatable."),
    click.option("--inter-broker-sasl-mechanism", default=None,
                 help="The mechanism this broker logs in to its peers with (sasl.mechanism.inter.broker.protocol)."),
    click.option("--inter-broker-sasl-username", default=None, help="This broker's own SASL user name."),
    click.option("--inter-broker-sasl-password", default=None, help="This broker's own SASL password."),
]


def security_options(command):
    for option in reversed(_OPTIONS + TLS_OPTIONS):
        command = option(command)
    return command


def security_config(listeners, advertised_listeners, listener_security_protocol_map, inter_broker_listener_name,
                    sasl_enabled_mechanisms, sasl_plain_users, sasl_scram_users, inter_broker_sasl_mechanism,
                    inter_broker_sasl_username, inter_broker_sasl_password, advertised_host=None,
                    **tls) -> SecurityConfig:
    """Raises click.UsageError (one line, exit code 2) for what Kafka would refuse at start-up."""
    try:
        parsed = ()
        if listeners:
            parsed = parse_listeners(listeners, advertised_listeners, listener_security_protocol_map, advertised_host)
            inter_broker_listener(parsed, inter_broker_listener_name)
        elif advertised_listeners or inter_broker_listener_name:
            raise InvalidListeners("--advertised-listeners and --inter-broker-listener-name need --listeners")
        for spec in sasl_scram_users:
            parse_add_scram(spec)
    except (InvalidListeners, InvalidCredentialSpec) as exc:
        raise click.UsageError(str(exc)) from None
    mechanisms = tuple(m.strip().upper() for m in sasl_enabled_mechanisms.split(",") if m.strip())
    unknown = set(mechanisms) - set(_MECHANISMS.split(","))
    if unknown:
        raise click.UsageError(f"--sasl-enabled-mechanisms: {sorted(unknown)} not supported ({_MECHANISMS})")
    login = None
    if inter_broker_sasl_mechanism or inter_broker_sasl_username:
        if not (inter_broker_sasl_mechanism and inter_broker_sasl_username and inter_broker_sasl_password):
            raise click.UsageError("--inter-broker-sasl-mechanism, -username and -password go together")
        login = InterBrokerLogin(inter_broker_sasl_mechanism.upper(), inter_broker_sasl_username,
                                 inter_broker_sasl_password)
    return SecurityConfig(listeners=parsed, inter_broker_listener_name=inter_broker_listener_name,
                          sasl_enabled_mechanisms=mechanisms, sasl_plain_users=sasl_plain_users,
                          sasl_scram_users=tuple(sasl_scram_users), inter_broker_login=login, tls=tls_config(**tls))
