"""The settings table (broker/settings/table.py) and how values are resolved from it
(broker/settings/sources.py): flag > TWINLOG_* environment > --config file > default."""

from __future__ import annotations

import dataclasses

import click
import pytest
from hypothesis import given, strategies as st

from broker.settings.config import BrokerConfig
from broker.settings.config_from_settings import config_with
from broker.settings.kinds import Kind
from broker.settings.sources import ConfigFile, SettingError, read_config_file, resolve
from broker.settings.serve_options import setting_options
from broker.settings.setting import BOTH, TOPIC
from broker.settings.table import BROKER_SETTINGS, SETTINGS, TOPIC_CONFIGS
from segment.log import LogConfig

# Every flag `twinlog serve` had before the table: tests, the Makefile, bench and docs use them.
FLAGS_BEFORE_THE_TABLE = """
data-dir host port advertised-host node-id storage-mode num-partitions auto-create-topics
no-auto-create-topics segment-bytes retention-ms retention-bytes retention-check-ms flush-messages
flush-interval-ms offsets-topic-partitions offsets-topic-segment-bytes group-initial-rebalance-delay-ms
group-min-session-timeout-ms group-max-session-timeout-ms allow-internal-topic-changes fetch-max-bytes
min-free-bytes commitlog-file-bytes index-hash-slots index-max-entries max-open-segment-files
file-delete-delay-ms etcd default-replication-factor min-insync-replicas replica-lag-time-max-ms
broker-session-timeout-ms offsets-topic-replication-factor unclean-leader-election
no-unclean-leader-election queued-max-request-bytes connections-max-idle-ms log-cleaner-enable
no-log-cleaner-enable log-cleaner-threads log-cleaner-backoff-ms log-cleaner-dedupe-buffer-size
metrics-port log-level listeners advertised-listeners listener-security-protocol-map
inter-broker-listener-name sasl-enabled-mechanisms sasl-plain-users sasl-scram-user
inter-broker-sasl-mechanism inter-broker-sasl-username inter-broker-sasl-password ssl-keystore-location
ssl-key-location ssl-key-password ssl-truststore-location ssl-client-auth listener-ssl-client-auth
authorizer super-users allow-everyone-if-no-acl-found
""".split()


def _serve_options() -> dict[str, click.Option]:
    serve = setting_options(click.command()(lambda **params: None))  # as `twinlog serve` and `config show` have them
    return {opt: p for p in serve.params for opt in (*p.opts, *p.secondary_opts)}


def test_every_option_of_serve_has_help_text_and_every_old_flag_is_kept():
    options = _serve_options()
    assert all(p.help and p.help.strip() for p in options.values())
    assert sorted(f"--{f}" for f in FLAGS_BEFORE_THE_TABLE if f"--{f}" not in options) == []
    assert len({s.name for s in SETTINGS}) == len(SETTINGS)
    assert len({s.env_name for s in BROKER_SETTINGS}) == len(BROKER_SETTINGS)
    assert len({s.param_name for s in BROKER_SETTINGS}) == len(BROKER_SETTINGS)
    assert len(TOPIC_CONFIGS) == len([s for s in SETTINGS if s.scope in (TOPIC, BOTH)])


# BrokerConfig's fields that hold more than one setting (built by config_from_settings.py)
COMPOSITE = {"log_defaults", "security", "authorizer", "consumer_groups", "share_groups", "delegation_tokens", "streams_groups",
             "settings"}


def test_each_config_field_is_filled_by_one_row_and_has_no_default_of_its_own():
    targets = [s.target for s in SETTINGS if s.target and s.target.split(":")[0] in ("broker", "log")]
    assert len(set(targets)) == len(targets)
    for group, cls, composite in (("broker", BrokerConfig, COMPOSITE), ("log", LogConfig, set())):
        fields = dataclasses.fields(cls)
        assert sorted(f"{group}:{f.name}" for f in fields if f.name not in composite) == \
            sorted(t for t in targets if t.startswith(group + ":"))
        assert [f.name for f in fields if f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING] == []


def test_a_config_built_with_no_options_holds_the_tables_defaults(tmp_path):
    config = config_with(data_dir=tmp_path)
    for s in SETTINGS:
        group, _, key = (s.target or "").partition(":")
        if group == "broker" and key != "data_dir":
            assert getattr(config, key) == s.default, s.name
        elif group == "log":
            assert getattr(config.log_defaults, key) == s.default, s.name
    assert config.settings["log.dirs"] == (tmp_path, "flag")
    assert config.settings["min.insync.replicas"] == (1, "default")


SOURCES = ("flag", "env", "file")


@given(st.lists(st.sampled_from(SOURCES), unique=True), st.sampled_from(BROKER_SETTINGS))
def test_the_highest_source_given_wins(given_sources, setting):
    text = {"flag": "flag", "env": "env", "file": "file"}
    flags = {setting.param_name: text["flag"]} if "flag" in given_sources else {}
    env = {setting.env_name: text["env"]} if "env" in given_sources else {}
    file = ConfigFile("f.properties", {setting.name: text["file"]} if "file" in given_sources else {}, ())
    as_text = dataclasses.replace(setting, kind=Kind())  # the winner's raw text reaches the parser
    resolved = resolve(flags, env, file, settings=(as_text,))[setting.name]
    expected = next((s for s in SOURCES if s in given_sources), "default")
    assert resolved.source == expected
    assert resolved.value == (text[expected] if expected != "default" else setting.default)


def test_values_are_parsed_by_the_kind_wherever_they_come_from():
    got = resolve({"segment_bytes": "2048"}, {"TWINLOG_LOG_RETENTION_MS": "60000", "TWINLOG_LOG_CLEANER_ENABLE": "FALSE"},
                  ConfigFile("server.properties", {"num.partitions": "3", "log.level": "debug"}, ()))
    assert got["log.segment.bytes"].value == 2048 and got["log.segment.bytes"].origin == "--segment-bytes"
    assert got["log.retention.ms"].value == 60000 and got["log.retention.ms"].source == "env"
    assert got["log.cleaner.enable"].value is False
    assert got["num.partitions"].value == 3 and got["num.partitions"].source == "file"
    assert got["log.level"].value == "DEBUG"
    assert got["port"].value == 9092 and got["port"].source == "default"


@pytest.mark.parametrize("flags, env, file_values, message", [
    ({"segment_bytes": "1k"}, {}, {}, "invalid value for log.segment.bytes (from --segment-bytes): '1k' is not an integer"),
    ({}, {"TWINLOG_PORT": "70000"}, {}, "invalid value for port (from TWINLOG_PORT): 70000 is not in [0, 65535]"),
    ({}, {}, {"log.cleaner.enable": "yes"}, "invalid value for log.cleaner.enable (from f.properties): 'yes' is not true or false"),
    ({}, {}, {"storage.mode": "tape"}, "invalid value for storage.mode (from f.properties): 'tape' is not one of"),
])
def test_a_bad_value_names_its_key_and_where_it_came_from(flags, env, file_values, message):
    with pytest.raises(SettingError) as caught:
        resolve(flags, env, ConfigFile("f.properties", file_values, ()))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_server_properties_file_with_kafka_keys(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# Kafka's own file\nbroker.id=4\nlog.dirs=/var/kafka\\\n-logs\nlog.retention.hours = 168\n"
                    "listener.name.SSL.ssl.client.auth=required\nlistener.name.INTERNAL.ssl.client.auth=none\n"
                    "zookeeper.connect: localhost:2181\n")
    f = read_config_file(path)
    assert f.values == {"broker.id": "4", "log.dirs": "/var/kafka-logs", "log.retention.ms": str(168 * 3_600_000),
                        "listener.ssl.client.auth": "SSL=required;INTERNAL=none"}
    assert f.unknown == ("zookeeper.connect",)
    got = resolve({}, {}, f)
    assert got["listener.ssl.client.auth"].value == ("SSL=required", "INTERNAL=none")
    assert str(got["log.dirs"].value) == "/var/kafka-logs"
    with pytest.raises(SettingError, match="cannot read config file"):
        read_config_file(tmp_path / "missing.properties")


@pytest.mark.parametrize("lines, ms", [
    ("log.retention.hours=24", 24 * 3_600_000),
    ("log.retention.hours=24\nlog.retention.minutes=30", 30 * 60_000),  # the finest unit wins
    ("log.retention.minutes=30\nlog.retention.hours=24\nlog.retention.ms=5000", 5000),
    ("log.retention.hours=-1", -1),  # forever
    ("log.retention.minutes=-5", -1),  # any negative: forever, as KafkaConfig.logRetentionTimeMillis
])
def test_retention_in_kafkas_coarser_units(tmp_path, lines, ms):
    path = tmp_path / "server.properties"
    path.write_text(lines + "\n")
    f = read_config_file(path)
    assert f.unknown == ()
    assert resolve({}, {}, f)["log.retention.ms"].value == ms
    assert resolve({"retention_ms": 7}, {}, f)["log.retention.ms"].value == 7  # a flag still wins


def test_a_bad_coarser_value_names_its_own_key(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("log.retention.hours=2h\n")
    with pytest.raises(SettingError) as caught:
        read_config_file(path)
    assert str(caught.value) == f"invalid value for log.retention.hours (from {path}): '2h' is not an integer"
