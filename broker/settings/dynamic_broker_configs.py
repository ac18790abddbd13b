"""Broker configs Kafka takes at runtime: AlterConfigs and IncrementalAlterConfigs on a BROKER
resource, for one broker (its id) or the cluster default (an empty name), as Kafka's
DynamicBrokerConfig lists them (AllDynamicConfigs) and checks a change (validateConfigs):

1. a name Kafka cannot update dynamically: "Cannot update these configs dynamically: Set(...)";
2. a keystore / truststore config without a listener prefix: "These security configs can be
   dynamically updated only per-listener using the listener prefix: Set(...)";
3. at the cluster default, a per-broker config (listener and security ones, but for the
   cluster-level connection limits and network threads): "Cannot update these configs at
   default cluster level, broker id must be specified: Set(...)".

Every refusal is INVALID_REQUEST with the check's message, as Kafka's ConfigAdminManager
answers (validateBrokerConfigChange; KAFKA-13609 keeps it so). IncrementalAlterConfigs checks
the configs the resource would have after its operations, stored ones included.
`listener.name.<listener>.<config>` takes the config's rules (Kafka's ListenerConfigRegex).

What twinlog takes: a dynamic config it has no setting for (sasl.kerberos.*, num.io.threads,
max.connections, ...: machinery twinlog does not have) is kept and described, and changes
nothing; dynamic_no_effect.py says why for each, in its DescribeConfigs documentation and the
docs. The topic defaults twinlog applies live (log.retention.ms, compression.type,
min.insync.replicas, ...) and the controller's unclean.leader.election.enable
(dynamic_topic_defaults.py) are kept, their values checked by their settings, and act at once.
Any other dynamic config that is one of twinlog's settings (log.cleaner.threads, listeners, ...)
is applied at start-up only, so a change to it is refused by rule 1 with that reason, rather
than kept and silently not applied.
"""

from __future__ import annotations

import re

from wire.error_codes import ErrorCode
from wire.config_codes import AlterConfigOp

from broker.settings.dynamic_topic_defaults import LIVE, check_values
from broker.settings.table import BY_KEY
from broker.settings.topic_config_changes import DELETE, SET, ConfigChangeError, ConfigOp

# SslConfigs.RECONFIGURABLE_CONFIGS: per listener only (DynamicSecurityConfigs)
SECURITY_PER_LISTENER = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
})
# DynamicListenerConfig.ReconfigurableConfigs
LISTENER = frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads",
})
CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
# DynamicLogConfig's own (KIP-1066): a broker's log dirs, so per broker (cordoned_log_dirs.py)
LOG_DIRS = frozenset({"cordoned.log.dirs"})
PER_BROKER = (SECURITY_PER_LISTENER | LISTENER) - CLUSTER_LEVEL_LISTENER | LOG_DIRS

# DynamicLogConfig: the broker synonyms of topic configs (ServerTopicConfigSynonyms)
LOG = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes", "log.retention.ms",
    "message.max.bytes", "log.index.interval.bytes", "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
    "min.insync.replicas", "compression.type", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level", "log.preallocate", "log.message.timestamp.type",
    "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
    "log.local.retention.ms", "log.local.retention.bytes",
})
OTHERS = frozenset({
    # LogCleaner.RECONFIGURABLE_CONFIGS
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
    # DynamicThreadPool.RECONFIGURABLE_CONFIGS
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "metric.reporters", "config.providers",
    # SocketServer.RECONFIGURABLE_CONFIGS
    "max.connections.per.ip", "max.connections.per.ip.overrides",
    # DynamicProducerStateManagerConfig
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
    # ShareCoordinatorConfig.RECONFIGURABLE_CONFIGS
    "share.coordinator.cached.buffer.max.bytes",
})
DYNAMIC = SECURITY_PER_LISTENER | LISTENER | LOG | LOG_DIRS | OTHERS
# The LIST-typed ones twinlog keeps (APPEND / SUBTRACT take them), with Kafka's defaults
KAFKA_LISTS = {"sasl.kerberos.principal.to.local.rules": "DEFAULT", "ssl.cipher.suites": "",
               "ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "metric.reporters": "", "config.providers": ""}

_LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")


def base_name(name: str) -> str:
    prefixed = _LISTENER_CONFIG.fullmatch(name)
    return prefixed.group(1) if prefixed else name


def _kafka_set(names) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"  # Scala's Set as Kafka's messages print it


def check_change(configs: dict[str, str | None], per_broker: bool) -> dict[str, str]:
    """A resource's new dynamic configs (name -> value), checked by Kafka's rules above; raises
    ConfigChangeError. `per_broker`: the resource names a broker id, not the cluster default."""
    nulls = [n for n, v in configs.items() if v is None]
    if nulls:
        raise ConfigChangeError(ErrorCode.invalid_request, "Null value not supported for : " + ", ".join(nulls))
    static = [n for n in configs if base_name(n) not in DYNAMIC]
    if static:
        raise ConfigChangeError(ErrorCode.invalid_request, f"Cannot update these configs dynamically: {_kafka_set(static)}")
    unprefixed = [n for n in configs if n in SECURITY_PER_LISTENER]
    if unprefixed:
        raise ConfigChangeError(ErrorCode.invalid_request, "These security configs can be dynamically updated only "
                                f"per-listener using the listener prefix: {_kafka_set(unprefixed)}")
    at_start = [n for n in configs if base_name(n) in BY_KEY and n not in LIVE]
    if at_start:
        raise ConfigChangeError(ErrorCode.invalid_request, f"Cannot update these configs dynamically: {_kafka_set(at_start)} "
                                "(twinlog applies its own settings at start-up only)")
    if not per_broker:
        broker_only = [n for n in configs if n in PER_BROKER or (n != base_name(n) and base_name(n) not in CLUSTER_LEVEL_LISTENER)]
        if broker_only:
            raise ConfigChangeError(ErrorCode.invalid_request, "Cannot update these configs at default cluster level, "
                                    f"broker id must be specified: {_kafka_set(broker_only)}")
    check_values(configs)
    return configs


def incremental_broker(current: dict[str, str], ops: list[ConfigOp], per_broker: bool) -> dict[str, str]:
    """IncrementalAlterConfigs of a BROKER resource: SET, DELETE, and APPEND / SUBTRACT on a LIST
    config (over the stored value, else Kafka's default), then check_change of the result, all or
    nothing as Kafka applies a resource."""
    names = [o.name for o in ops]
    if len(set(names)) != len(names):
        duplicated = sorted({n for n in names if names.count(n) > 1})
        raise ConfigChangeError(ErrorCode.invalid_request, f"Error due to duplicate config keys: {duplicated}")
    out = dict(current)
    for o in ops:
        if o.op == DELETE:
            out.pop(o.name, None)
            continue
        if o.value is None or o.op not in (SET, AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT):
            raise ConfigChangeError(ErrorCode.invalid_request, f"Invalid operation {o.op} with value {o.value} for {o.name}")
        base = base_name(o.name)
        if o.op == SET or base not in DYNAMIC or (base in BY_KEY and o.name not in LIVE):
            out[o.name] = o.value  # a config not taken here is refused below, whatever the operation
        elif base in KAFKA_LISTS:  # Kafka's prepareIncrementalConfigs: from the stored value, else the default
            items = out.get(o.name, KAFKA_LISTS[base]).split(",")
            given = o.value.split(",")
            items = items + given if o.op == AlterConfigOp.APPEND else [i for i in items if i not in given]
            out[o.name] = ",".join(i for i in items if i)
        else:
            verb = "append" if o.op == AlterConfigOp.APPEND else "subtract"
            raise ConfigChangeError(ErrorCode.invalid_request, f"Config value {verb} is not allowed for config key: {o.name}")
    return check_change(out, per_broker)


def is_sensitive(name: str) -> bool:
    """Kafka's PASSWORD configs: described as null, as Kafka answers."""
    base = base_name(name)
    return base.endswith(".password") or base in ("sasl.jaas.config", "ssl.keystore.key")
