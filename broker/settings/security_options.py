"""`twinlog serve`'s listener and SASL settings, checked together: the options are declared in
the settings table (table.py), what each means is in security_config.py."""

from __future__ import annotations

import click

from wire.sasl_mechanism import MECHANISMS

from broker.net.listeners import InvalidListeners, inter_broker_listener, parse_listeners
from broker.security.sasl_credentials import InvalidCredentialSpec, parse_add_scram
from broker.settings.tls_options import tls_config
from broker.settings.security_config import InterBrokerLogin, SecurityConfig



def security_config(listeners, advertised_listeners, listener_security_protocol_map, inter_broker_listener_name,
                    sasl_enabled_mechanisms, sasl_plain_users, sasl_scram_users, inter_broker_sasl_mechanism,
                    inter_broker_sasl_username, inter_broker_sasl_password, advertised_host=None,
                    default_listener: str | None = None, **tls) -> SecurityConfig:
    """Raises click.UsageError (one line, exit code 2) for what Kafka would refuse at start-up.
    `default_listener`: what --listeners is when only --advertised-listeners or
    --inter-broker-listener-name is given ("PLAINTEXT://<host>:<port>" of --host and --port), as
    Kafka's listeners defaults to PLAINTEXT://:9092: a container that sets only
    KAFKA_ADVERTISED_LISTENERS, as every Kafka image's users do, starts."""
    try:
        parsed = ()
        if not listeners and (advertised_listeners or inter_broker_listener_name):
            listeners = default_listener
        if listeners:
            parsed = parse_listeners(listeners, advertised_listeners, listener_security_protocol_map, advertised_host)
            inter_broker_listener(parsed, inter_broker_listener_name)
        for spec in sasl_scram_users:
            parse_add_scram(spec)
    except (InvalidListeners, InvalidCredentialSpec) as exc:
        raise click.UsageError(str(exc)) from None
    mechanisms = tuple(m.strip().upper() for m in sasl_enabled_mechanisms.split(",") if m.strip())
    unknown = set(mechanisms) - set(MECHANISMS)
    if unknown:
        raise click.UsageError(f"--sasl-enabled-mechanisms: {sorted(unknown)} not supported ({','.join(MECHANISMS)})")
    login = None
    if inter_broker_sasl_mechanism or inter_broker_sasl_username:
        if not (inter_broker_sasl_mechanism and inter_broker_sasl_username and inter_broker_sasl_password):
            raise click.UsageError("--inter-broker-sasl-mechanism, -username and -password go together")
        login = InterBrokerLogin(inter_broker_sasl_mechanism.upper(), inter_broker_sasl_username,
                                 inter_broker_sasl_password)
    return SecurityConfig(listeners=parsed, inter_broker_listener_name=inter_broker_listener_name,
                          sasl_enabled_mechanisms=mechanisms, sasl_plain_users=sasl_plain_users,
                          sasl_scram_users=tuple(sasl_scram_users), inter_broker_login=login, tls=tls_config(**tls))
