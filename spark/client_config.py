"""Kafka client settings for the three clients the data source opens, from `kafka.*` options.

The source and sink run on confluent-kafka (librdkafka), while users of Spark's connector write
Java client property names. Most names are the same in both; this module renames the few that
differ, drops the Java-only ones that only tune the Java client, and refuses those whose meaning
cannot carry over (a JKS truststore), so a pipeline's `kafka.*` options work unchanged.

Defaults follow the connector, not librdkafka, where the two differ:
- consumers read with isolation.level=read_uncommitted (librdkafka's default is read_committed);
- consumers never commit (enable.auto.commit=false) and never reset silently
  (auto.offset.reset=error, the Java client's "none"): lost data is the source's decision;
- producers are idempotent with acks=all (the Java client's defaults since Kafka 3.0).

librdkafka's own log lines (a "Connect to ... failed: Connection refused" per client per try
while a broker is down, which it rides out by itself) go to the Python logger
`spark.librdkafka` instead of stderr, like the Java client's lines go to log4j: silent unless
the application configures logging.
"""

from __future__ import annotations

import logging
import re
from typing import Mapping

from spark.options import OptionError

log = logging.getLogger(__name__)
LIBRDKAFKA_LOG = logging.getLogger("spark.librdkafka")
LIBRDKAFKA_LOG.addHandler(logging.NullHandler())

_RENAMED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
}

# Settings of the Java client with no librdkafka counterpart that only affect how it performs.
_JAVA_ONLY = {
    "max.poll.records", "default.api.timeout.ms", "buffer.memory", "max.block.ms",
    "partition.assignment.strategy", "client.dns.lookup", "ssl.keystore.type",
    "ssl.truststore.type", "ssl.protocol", "allow.auto.create.topics",
    "metric.reporters", "metrics.recording.level",
}

_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')


def _translate(params: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in params.items():
        if name in _JAVA_ONLY:
            log.info("kafka.%s only tunes the Java client; not passed to librdkafka", name)
            continue
        if name in ("ssl.truststore.location", "ssl.truststore.password"):
            raise OptionError(f"kafka.{name}: JKS truststores are Java-only; give the CA certificate "
                              "as PEM with 'kafka.ssl.ca.location'")
        if name == "sasl.jaas.config":
            # PLAIN / SCRAM login modules carry the credentials librdkafka takes as two settings.
            found = dict(_JAAS.findall(value))
            if "username" in found:
                out["sasl.username"] = found["username"]
            if "password" in found:
                out["sasl.password"] = found["password"]
            continue
        out[_RENAMED.get(name, name)] = value
    return out


ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def isolation_level(params: Mapping[str, str]) -> str:
    """kafka.isolation.level, the connector's default read_uncommitted where it is not given.
    The executors' consumers and the driver's ListOffsets both take it, so a read_committed
    query's latest offset is the last stable offset and no range reaches into an open
    transaction (the connector's KafkaOffsetReaderAdmin does the same)."""
    level = params.get("isolation.level", ISOLATION_LEVELS[0])
    if level not in ISOLATION_LEVELS:
        raise OptionError(f"kafka.isolation.level must be one of {list(ISOLATION_LEVELS)}, got {level!r}")
    return level


def consumer_config(bootstrap: str, params: Mapping[str, str], group_id: str) -> dict:
    config = {
        "bootstrap.servers": bootstrap,
        "client.id": f"{group_id}-client",
        "logger": LIBRDKAFKA_LOG,
    }
    config.update(_translate(params))
    config.update({
        "isolation.level": isolation_level(params),
        # Not overridable: the checkpoint, not Kafka, owns the offsets (as in the connector).
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
    })
    return config


def admin_config(bootstrap: str, params: Mapping[str, str]) -> dict:
    config = {"bootstrap.servers": bootstrap, "logger": LIBRDKAFKA_LOG}
    # Consumer-only and producer-only settings make librdkafka's admin client warn; drop them.
    for name, value in _translate(params).items():
        if name not in ("isolation.level", "fetch.wait.max.ms", "fetch.min.bytes",
                        "max.partition.fetch.bytes", "fetch.max.bytes", "session.timeout.ms",
                        "acks", "linger.ms", "batch.size", "compression.type",
                        "enable.idempotence", "retries", "delivery.timeout.ms"):
            config[name] = value
    return config


def producer_config(bootstrap: str, params: Mapping[str, str]) -> dict:
    config = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "logger": LIBRDKAFKA_LOG,
    }
    for name, value in _translate(params).items():
        if name in ("isolation.level", "fetch.wait.max.ms", "fetch.min.bytes",
                    "max.partition.fetch.bytes", "fetch.max.bytes", "session.timeout.ms"):
            continue
        config[name] = value
    return config
