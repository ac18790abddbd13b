"""The settings table's rows of security: listeners, SASL, TLS, ACLs and delegation tokens. Each row is
a Setting (setting.py); table.py gathers these with the other subjects'.
"""

from __future__ import annotations

from wire.config_codes import ConfigType
from wire.sasl_mechanism import MECHANISMS

from broker.net.listeners import DEFAULT_PROTOCOL_MAP
from broker.security.tls_config import CLIENT_AUTH
from broker.settings.kinds import Bool, Choice, FilePath, Int, Items, Text
from broker.settings.setting import DAY, MINUTE, Setting

_PEM = FilePath(must_exist=True)

SECURITY: tuple[Setting, ...] = (
    # Listeners and SASL: security_config.py says what each means
    Setting("listeners", "listeners", Text("NAME://HOST:PORT,...", ConfigType.LIST), None,
            "Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://:9093 (overrides "
            "--host/--port) [default: PLAINTEXT://--host:--port].", "security:listeners"),
    Setting("advertised.listeners", "advertised-listeners", Text("NAME://HOST:PORT,...", ConfigType.LIST), None,
            "What Metadata names for clients of each listener [default: the listener's own address].",
            "security:advertised_listeners"),
    Setting("listener.security.protocol.map", "listener-security-protocol-map",
            Text("NAME:PROTOCOL,...", ConfigType.LIST), DEFAULT_PROTOCOL_MAP, "Each listener's security protocol.",
            "security:listener_security_protocol_map"),
    Setting("inter.broker.listener.name", "inter-broker-listener-name", Text("NAME"), None,
            "The listener brokers fetch from each other on [default: the first listener].",
            "security:inter_broker_listener_name"),
    Setting("sasl.enabled.mechanisms", "sasl-enabled-mechanisms", Text("MECHANISM,...", ConfigType.LIST),
            ",".join(MECHANISMS), "SASL mechanisms offered on SASL listeners.",
            "security:sasl_enabled_mechanisms"),
    Setting("sasl.plain.users", "sasl-plain-users", _PEM, None,
            'PLAIN users: a file with user_NAME="PASSWORD" entries (Kafka\'s PlainLoginModule JAAS section '
            "works as is).", "security:sasl_plain_users"),
    Setting("sasl.scram.users", "sasl-scram-user", Items("SCRAM-SHA-256=[name=N,password=P]"), (),
            "Add or replace a SCRAM user at start-up, salted and stored in the data dir (kafka-storage "
            "format --add-scram syntax); repeatable.", "security:sasl_scram_users", param="sasl_scram_users",
            sensitive=True),
    Setting("sasl.mechanism.inter.broker.protocol", "inter-broker-sasl-mechanism", Text("MECHANISM"), None,
            "The mechanism this broker logs in to its peers with.", "security:inter_broker_sasl_mechanism"),
    Setting("inter.broker.sasl.username", "inter-broker-sasl-username", Text("NAME"), None,
            "This broker's own SASL user name.", "security:inter_broker_sasl_username"),
    Setting("inter.broker.sasl.password", "inter-broker-sasl-password", Text("PASSWORD", ConfigType.PASSWORD), None,
            "This broker's own SASL password.", "security:inter_broker_sasl_password", sensitive=True),
    # TLS: broker/security/tls_config.py says how the PEM files map to Kafka's keystore settings
    Setting("ssl.keystore.location", "ssl-keystore-location", _PEM, None,
            "SSL / SASL_SSL listeners: the broker's certificate chain, PEM, leaf first; may hold the "
            "private key too (ssl.keystore.type=PEM).", "security:ssl_keystore_location"),
    Setting("ssl.key.location", "ssl-key-location", _PEM, None,
            "The broker's private key, PEM, if not in the keystore file.", "security:ssl_key_location"),
    Setting("ssl.key.password", "ssl-key-password", Text("PASSWORD", ConfigType.PASSWORD), None,
            "Password of an encrypted private key.", "security:ssl_key_password", sensitive=True),
    Setting("ssl.truststore.location", "ssl-truststore-location", _PEM, None,
            "CA certificates, PEM, that client certificates must chain to.", "security:ssl_truststore_location"),
    Setting("ssl.client.auth", "ssl-client-auth", Choice(CLIENT_AUTH), "none",
            "Client certificates on SSL listeners; the subject DN is the principal.", "security:ssl_client_auth"),
    Setting("listener.ssl.client.auth", "listener-ssl-client-auth", Items("NAME=VALUE"), (),
            "One listener's ssl.client.auth, SASL_SSL ones included; repeatable. In a file: "
            "listener.name.NAME.ssl.client.auth=VALUE.", "security:listener_ssl_client_auth"),
    # ACLs: acl_options.py checks them together
    Setting("authorizer.enable", "authorizer", Bool(), False,
            "Check every request against ACLs (Kafka's authorizer.class.name) [default: off].", "acl:authorizer"),
    Setting("super.users", "super-users", Text("User:A;User:B"), "",
            "Principals every check allows, separated by ';'.", "acl:super_users"),
    Setting("allow.everyone.if.no.acl.found", "allow-everyone-if-no-acl-found", Bool(), False,
            "Allow a request on a resource no ACL names [default: refuse].", "acl:allow_everyone_if_no_acl_found"),
    # Delegation tokens (KIP-48): delegation_token_options.py
    Setting("delegation.token.secret.key", "delegation-token-secret-key", Text("KEY", ConfigType.PASSWORD), None,
            "Key of the delegation tokens' HMACs; the same on every broker of a cluster. Unset or empty: no "
            "delegation tokens (the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED).", "token:secret_key",
            sensitive=True, aliases=("delegation.token.master.key",)),
    Setting("delegation.token.max.lifetime.ms", "delegation-token-max-lifetime-ms", Int(1, long=True), 7 * DAY,
            "A token's maximum lifetime: no renew takes it further.", "token:max_lifetime_ms"),
    Setting("delegation.token.expiry.time.ms", "delegation-token-expiry-time-ms", Int(1, long=True), DAY,
            "How long a new or renewed token is valid before it needs a renew.", "token:expiry_time_ms"),
    Setting("delegation.token.expiry.check.interval.ms", "delegation-token-expiry-check-interval-ms",
            Int(1, long=True), 60 * MINUTE, "How often expired tokens are removed.", "token:expiry_check_interval_ms"),
)
