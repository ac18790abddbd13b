"""The dynamic broker configs twinlog accepts and keeps but does not act on, and why.

Kafka lists them as dynamic (dynamic_broker_configs.py DYNAMIC); refusing them would break
tools that set them cluster-wide (librdkafka's 0081_admin sets sasl.kerberos.* on a broker), so
they are taken with Kafka's checks, kept and described, and change nothing here because the
machinery they tune does not exist in twinlog. The reason below is each one's DescribeConfigs
documentation and its line in docs/configuration.md, so what a user is told is what the broker
does. A `listener.name.<listener>.<config>` form has its config's reason.

The configs twinlog applies are elsewhere: the topic defaults and the controller's unclean
election (dynamic_topic_defaults.py LIVE), and cordoned.log.dirs (cordoned_log_dirs.py). twinlog's own settings that Kafka takes at runtime
are refused (start-up only), never kept and ignored.
"""

from __future__ import annotations

from broker.settings.dynamic_broker_configs import DYNAMIC, LOG_DIRS, base_name
from broker.settings.dynamic_topic_defaults import LIVE
from broker.settings.table import BY_KEY

_REASONS = {
    ("ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
     "ssl.keystore.password", "ssl.truststore.type", "ssl.truststore.password", "ssl.keymanager.algorithm",
     "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
     "ssl.engine.factory.class", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"):
        "TLS here is Python's ssl module set up once at start-up from PEM files (ssl.keystore.location, "
        "ssl.key.location, ssl.truststore.location); a listener's TLS context is not rebuilt at runtime, and "
        "the JSSE choices (providers, key managers, engine factories) have no counterpart.",
    ("sasl.jaas.config", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
     "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
     "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
     "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
     "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds", "principal.builder.class"):
        "twinlog has no JAAS, no GSSAPI (Kerberos) and no OAUTHBEARER login refresh: its SASL mechanisms are "
        "PLAIN and SCRAM with users from sasl.plain.users and the SCRAM store, and a principal is always "
        "User:<name> (or the TLS subject).",
    ("num.io.threads", "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
     "background.threads"):
        "A broker is one asyncio event loop, with worker threads only for blocking file work: it has no "
        "request-handler, network, fetcher or recovery thread pools to resize.",
    ("metric.reporters", "config.providers"):
        "Java plugin classes: the broker is not a JVM. Metrics are served in Prometheus form on --metrics-port.",
    ("max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
     "max.connection.creation.rate"):
        "twinlog does not count connections against a broker-wide or per-ip limit. An ip's connection "
        "creation rate is limited by a client quota here (AlterClientQuotas, entity ip, "
        "connection_creation_rate).",
    ("log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second"):
        "The cleaner reads and writes whole segments through the page cache; its I/O has no buffer of this "
        "size and is not throttled.",
    ("log.index.size.max.bytes",):
        "An offset index grows with its segment (one entry every index.interval.bytes) instead of being "
        "preallocated to a maximum size, so no segment rolls because its index is full.",
    ("log.preallocate",):
        "Segments and the commitlog grow as written; none is preallocated.",
    ("log.local.retention.ms", "log.local.retention.bytes"):
        "Without tiered storage the local log is the whole log, which retention.ms and retention.bytes govern.",
    ("producer.id.expiration.ms",):
        "An idle producer's id and sequence state is not expired on a timer here.",
    ("share.coordinator.cached.buffer.max.bytes",):
        "The share coordinator writes its state records through the broker's write path with no cache "
        "buffer of its own.",
}
NO_EFFECT: dict[str, str] = {name: reason for names, reason in _REASONS.items() for name in names}


def accepted_without_effect() -> list[str]:
    """Every dynamic config twinlog takes and does not act on: those with no setting here and no
    live target (each must have a reason above; broker/tests/test_dynamic_no_effect.py)."""
    return sorted(n for n in DYNAMIC if n not in LIVE and n not in BY_KEY and n not in LOG_DIRS)


def reason(name: str) -> str | None:
    """Why a kept dynamic config (a listener-prefixed one too) changes nothing here; None if it
    is applied."""
    return NO_EFFECT.get(base_name(name))
