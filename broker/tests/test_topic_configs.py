"""The topic configs and DescribeConfigs' entries, both derived from the settings table
(broker/settings/topic_configs.py, described_configs.py)."""

from __future__ import annotations

import pytest

from wire.config_codes import ConfigSource, ConfigType

from broker.settings.config_from_settings import config_with
from broker.settings.described_configs import Synonym, broker_entries, topic_entries
from broker.settings.setting import BOTH, TOPIC
from broker.settings.table import TOPIC_CONFIGS
from broker.settings.topic_configs import InvalidConfig, log_config_for, validate_topic_configs

STATIC, DEFAULT, TOPIC_SET = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG, ConfigSource.DYNAMIC_TOPIC_CONFIG


@pytest.fixture
def config(tmp_path):
    return config_with(data_dir=tmp_path)


def test_every_topic_config_takes_the_value_describe_shows_for_it(config):
    shown = {e.name: e.value for e in topic_entries(config, {}, {}, "segment", {})}
    assert sorted(shown) == sorted(TOPIC_CONFIGS)
    assert validate_topic_configs(shown) == shown  # what a client reads back, it may write back


@pytest.mark.parametrize("name, value, reason", [
    ("segment.bytes", "13", "13 is not at least 14"),
    ("retention.ms", "forever", "'forever' is not an integer"),
    ("min.cleanable.dirty.ratio", "1.5", "1.5 is not in [0, 1]"),
    ("cleanup.policy", "compact, delete", "is not a comma-separated list of delete, compact"),
    ("cleanup.policy", "", "is not a comma-separated list"),
    ("message.timestamp.type", "createtime", "is not one of CreateTime, LogAppendTime"),
    ("storage.mode", "SEGMENT", "is not one of segment, commitlog"),  # serve's --storage-mode folds case; a topic's is kept as given
    ("min.insync.replicas", "0", "0 is not at least 1"),
])
def test_a_bad_value_is_invalid_config_with_the_reason(name, value, reason):
    with pytest.raises(InvalidConfig) as caught:
        validate_topic_configs({name: value})
    assert str(caught.value).startswith(f"Invalid value {value} for configuration {name}: ")
    assert reason in str(caught.value)


def test_unknown_names_and_null_values_are_invalid_config():
    with pytest.raises(InvalidConfig, match="Unknown topic config name: log.retention.ms"):
        validate_topic_configs({"log.retention.ms": "1"})  # the broker's name, not the topic's
    with pytest.raises(InvalidConfig, match="Null value"):
        validate_topic_configs({"retention.ms": None})


def test_overrides_reach_the_log_config_as_values_and_the_rest_are_the_brokers(tmp_path):
    config = config_with(data_dir=tmp_path, retention_ms=1000)
    log = log_config_for(config.log_defaults, {"min.cleanable.dirty.ratio": "0.25", "segment.bytes": "2048",
                                               "min.insync.replicas": "2", "compression.type": "zstd"})
    assert (log.min_cleanable_dirty_ratio, log.segment_bytes, log.retention_ms) == (0.25, 2048, 1000)


def test_a_topic_default_is_the_brokers_effective_value_with_its_source(tmp_path):
    config = config_with(data_dir=tmp_path, min_insync_replicas=2)
    entries = {e.name: e for e in topic_entries(config, {}, {}, "segment", {"retention.ms": "5000"})}
    min_isr = entries["min.insync.replicas"]
    assert (min_isr.value, min_isr.source, min_isr.config_type) == ("2", STATIC, ConfigType.INT)
    assert min_isr.synonyms == (Synonym("min.insync.replicas", "2", STATIC), Synonym("min.insync.replicas", "1", DEFAULT))
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.config_type) == ("5000", TOPIC_SET, ConfigType.LONG)
    assert retention.synonyms == (Synonym("retention.ms", "5000", TOPIC_SET), Synonym("log.retention.ms", "604800000", DEFAULT))
    policy = entries["cleanup.policy"]  # a topic config with no broker setting: its default, no synonym
    assert (policy.value, policy.source, policy.synonyms, policy.config_type) == ("delete", DEFAULT, (), ConfigType.LIST)
    assert entries["flush.messages"].value == str(2**63 - 1)  # our 0 (never), in Kafka's words


def test_a_topic_keeps_the_layout_it_was_created_in(tmp_path):
    config = config_with(data_dir=tmp_path, storage_mode="commitlog")
    (mode,) = [e for e in topic_entries(config, {}, {}, "segment", {}) if e.name == "storage.mode"]
    assert (mode.value, mode.source) == ("segment", STATIC)


def test_broker_entries_hide_sensitive_values_in_synonyms_too(tmp_path):
    config = config_with(data_dir=tmp_path, ssl_key_password="s3cret", retention_ms=1000)
    entries = {e.name: e for e in broker_entries(config, {}, {})}
    password = entries["ssl.key.password"]
    assert (password.value, password.sensitive, password.synonyms) == (None, True, (Synonym("ssl.key.password", None, STATIC),))
    assert entries["log.retention.ms"].synonyms == (Synonym("log.retention.ms", "1000", STATIC),
                                                    Synonym("log.retention.ms", "604800000", DEFAULT))
    assert [e.name for e in broker_entries(config, {}, {})] == sorted(entries)


def test_the_list_configs_are_the_tables_list_typed_topic_configs():
    listed = {name for name, s in TOPIC_CONFIGS.items() if s.kind.config_type == ConfigType.LIST}
    assert listed == {"cleanup.policy", "leader.replication.throttled.replicas",
                            "follower.replication.throttled.replicas"}
    assert {s.scope for s in TOPIC_CONFIGS.values()} == {TOPIC, BOTH}
