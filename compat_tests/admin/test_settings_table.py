"""The whole settings table (broker/settings/table.py) walked against DescribeConfigs of a real
broker, started with non-default values for a few settings (flags and a server.properties),
--min-insync-replicas 2 among them.

For every broker setting and every topic config: the value, Kafka's type, the source and the
synonyms a client reads, and the documentation. A topic that does not set a config with a
broker setting (retention.ms <- log.retention.ms) has the broker's effective value, its source
and its synonyms, as Kafka answers: min.insync.replicas reads 2 from STATIC_BROKER_CONFIG on a
broker that enforces 2 (before, 1 from DEFAULT_CONFIG: a wrong answer). Expected values come
from the table and from what the broker's command line and file gave it.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource as KafkaSource, ResourceType

from broker.settings.dynamic_topic_defaults import LIVE
from broker.settings.kinds import Bool
from broker.settings.setting import BOTH
from broker.settings.table import BROKER_SETTINGS, TOPIC_CONFIGS
from compat_tests.helpers.broker_process import broker_kind
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.skipif(broker_kind() != "twinlog", reason="twinlog's own settings table")

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
NOT_ENOUGH_REPLICAS = 19

FLAGS = ["--min-insync-replicas", "2", "--retention-ms", "3600000", "--log-cleaner-threads", "2",
         "--no-auto-create-topics", "--flush-messages", "0"]  # the last one its default, given: still STATIC
SERVER_PROPERTIES = {"message.max.bytes": "2000000", "log.index.interval.bytes": "8192"}
OVERRIDES = {"retention.ms": "60000", "cleanup.policy": "compact,delete", "compression.type": "zstd"}


def given_settings(command: list[str]) -> dict[str, str]:
    """Setting name -> the text the broker was given for it: its command line over the file."""
    by_flag = {"--" + s.flag: s for s in BROKER_SETTINGS}
    negated = {"--no-" + s.flag: s for s in BROKER_SETTINGS if s.negatable}
    given = dict(SERVER_PROPERTIES)
    tokens = iter(command)
    for token in tokens:
        if token in negated:
            given[negated[token].name] = "false"
        elif token in by_flag:
            setting = by_flag[token]
            given[setting.name] = "true" if isinstance(setting.kind, Bool) else next(tokens)
    return given


def expected_broker_entry(setting, given: dict[str, str], proc) -> tuple:
    """(value, source, synonyms as (name, value, source)) Kafka's rules give this setting."""
    kind = setting.kind
    default = [] if setting.default is None else [
        (setting.name, None if setting.sensitive else kind.described(setting.default), DEFAULT_CONFIG)]
    if setting.name in ("listeners", "advertised.listeners"):  # the --host/--port given, never a default
        value = f"PLAINTEXT://{proc.host}:{proc.port}"
        return value, STATIC_BROKER_CONFIG, [(setting.name, value, STATIC_BROKER_CONFIG)]
    if setting.name in given:
        value = None if setting.sensitive else kind.described(kind.parse(given[setting.name]))
        return value, STATIC_BROKER_CONFIG, [(setting.name, value, STATIC_BROKER_CONFIG), *default]
    return (None if setting.sensitive else kind.described(setting.default)), DEFAULT_CONFIG, default


def describe(client: Client, resource_type: int, name: str) -> dict:
    r = client.request(32, 4, include_synonyms=True, include_documentation=True, resources=[
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}])
    (result,) = r.results
    assert result.error_code == 0, result
    return {e.name: e for e in result.configs}


def synonyms(entry) -> list[tuple]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_describe_configs_walks_the_whole_table(tmp_path, broker_factory):
    properties = tmp_path / "server.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in SERVER_PROPERTIES.items()))
    proc = broker_factory("--config", str(properties), *FLAGS)
    given = given_settings(proc.command())
    topic = unique_topic("settings-table")
    with Client.to(proc) as c:
        created = c.request(19, 7, validate_only=False, timeout=10_000, topics=[{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in OVERRIDES.items()]}])
        brokers = describe(c, BROKER_RESOURCE, "1")  # this broker (node.id 1): the cluster default ("") lists its dynamic configs alone
        topics = describe(c, TOPIC_RESOURCE, topic)
        refused = c.produce(topic, 0, make_batch([b"needs two in-sync replicas"], keys=[b"k"]), acks=-1)
        accepted = c.produce(topic, 0, make_batch([b"one is enough"], keys=[b"k"]), acks=1)  # compacted: keyed

    assert sorted(brokers) == sorted(s.name for s in BROKER_SETTINGS if s.describe)
    for setting in (s for s in BROKER_SETTINGS if s.describe):
        entry = brokers[setting.name]
        value, source, expected_synonyms = expected_broker_entry(setting, given, proc)
        assert (entry.value, entry.config_source, synonyms(entry)) == (value, source, expected_synonyms), setting.name
        assert (entry.config_type, entry.is_sensitive, entry.read_only) == (
            setting.kind.config_type, setting.sensitive, setting.name not in LIVE), setting.name
        assert entry.documentation == setting.doc

    (t,) = created.topics
    assert t.error_code == 0, t
    echoed = {e.name: (e.value, e.config_source) for e in t.configs}
    assert sorted(topics) == sorted(TOPIC_CONFIGS) == sorted(echoed)
    for name, setting in TOPIC_CONFIGS.items():
        entry = topics[name]
        broker_synonyms = synonyms(brokers[setting.name]) if setting.scope == BOTH else []
        if name in OVERRIDES:
            value, source = OVERRIDES[name], DYNAMIC_TOPIC_CONFIG
            expected_synonyms = [(name, value, DYNAMIC_TOPIC_CONFIG), *broker_synonyms]
        elif setting.scope == BOTH:  # the broker's effective value, its source and synonyms
            value, source, expected_synonyms = brokers[setting.name].value, brokers[setting.name].config_source, broker_synonyms
        else:
            value, source, expected_synonyms = setting.kind.described(setting.default), DEFAULT_CONFIG, []
        assert (entry.value, entry.config_source, synonyms(entry)) == (value, source, expected_synonyms), name
        assert (entry.config_type, entry.is_sensitive, entry.read_only) == (setting.kind.config_type, False, False), name
        assert entry.documentation == setting.doc
        assert echoed[name] == (value, source), name  # CreateTopics' answer says the same

    # The fixed wrong answer, spelled out: the value the broker enforces, and where it comes from
    min_isr = topics["min.insync.replicas"]
    assert (min_isr.value, min_isr.config_source) == ("2", STATIC_BROKER_CONFIG)
    assert synonyms(min_isr) == [("min.insync.replicas", "2", STATIC_BROKER_CONFIG),
                                 ("min.insync.replicas", "1", DEFAULT_CONFIG)]
    assert refused.error_code == NOT_ENOUGH_REPLICAS and accepted.error_code == 0

    # A real client reads the same (librdkafka's DescribeConfigs)
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    seen = admin.describe_configs([resource])[resource].result(10)
    assert (seen["min.insync.replicas"].value, seen["min.insync.replicas"].source) == \
        ("2", KafkaSource.STATIC_BROKER_CONFIG.value)
    assert (seen["retention.ms"].value, seen["retention.ms"].source) == ("60000", KafkaSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (seen["segment.ms"].value, seen["segment.ms"].source) == ("604800000", KafkaSource.DEFAULT_CONFIG.value)
