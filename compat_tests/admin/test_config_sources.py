"""Broker settings from flags, TWINLOG_* variables and a Kafka server.properties (issue 16 item 2),
seen through `twinlog config show` and through a real broker's DescribeConfigs.

Precedence is flag > environment > file > default; DescribeConfigs reports STATIC_BROKER_CONFIG
for a value from any of the first three and DEFAULT_CONFIG for a default, a sensitive value as
null. A bad value is one `Error:` line naming the key, exit code 2, nothing started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat_tests.helpers.broker_process import BrokerProcess, broker_kind
from compat_tests.helpers.raw_kafka import Client

pytestmark = pytest.mark.skipif(broker_kind() != "twinlog", reason="twinlog's own configuration")

ROOT = Path(__file__).resolve().parents[2]
_CLI = ROOT / ".venv" / "bin" / "twinlog"
TWINLOG = [str(_CLI)] if _CLI.exists() else [sys.executable, "-m", "broker"]
BROKER_RESOURCE, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 4, 5

SERVER_PROPERTIES = """\
# a Kafka server.properties: Kafka's keys, one twinlog does not serve (num.network.threads), and
# retention in two units (the milliseconds win, as in Kafka)
log.segment.bytes=2000000
num.partitions=3
log.retention.ms=111111
log.retention.hours=168
num.network.threads=3
"""
ENV = {"TWINLOG_NUM_PARTITIONS": "4", "TWINLOG_LOG_RETENTION_MS": "222222", "TWINLOG_SSL_KEY_PASSWORD": "s3cret"}
FLAGS = ["--retention-ms", "333333"]


def twinlog(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TWINLOG_")}
    return subprocess.run([*TWINLOG, *args], capture_output=True, text=True, timeout=30, env={**clean, **(env or {})})


@pytest.fixture
def server_properties(tmp_path) -> Path:
    path = tmp_path / "server.properties"
    path.write_text(SERVER_PROPERTIES)
    return path


def test_config_show_gives_each_value_and_its_source(server_properties):
    out = twinlog("config", "show", "--config", str(server_properties), *FLAGS, env=ENV)
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()}
    assert rows["log.retention.ms"] == ["333333", "flag", "--retention-ms"]  # flag over env over file
    assert rows["num.partitions"] == ["4", "env", "TWINLOG_NUM_PARTITIONS"]  # env over file
    assert rows["log.segment.bytes"] == ["2000000", "file", str(server_properties)]
    assert rows["port"] == ["9092", "default"]
    assert rows["ssl.key.password"] == ["<sensitive>", "env", "TWINLOG_SSL_KEY_PASSWORD"]
    assert "s3cret" not in out.stdout
    assert out.stderr.strip() == f"Warning: {server_properties}: 'num.network.threads' is not a twinlog setting; skipped"
    hours = server_properties.with_name("hours.properties")
    hours.write_text("log.retention.hours=1\n")  # Kafka's stock file says it in hours
    out = twinlog("config", "show", "--config", str(hours))
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()}
    assert (rows["log.retention.ms"], out.stderr) == (["3600000", "file", str(hours)], "")


@pytest.mark.parametrize("where", ["flag", "env", "file"])
@pytest.mark.parametrize("command", ["serve", "config show"])
def test_a_bad_value_is_one_line_naming_the_key(tmp_path, where, command):
    data_dir = tmp_path / "data"
    path = tmp_path / "server.properties"
    path.write_text("log.segment.bytes=12MB\n" if where == "file" else "")
    args = [*command.split(), "--data-dir", str(data_dir), "--config", str(path)]
    env = {"TWINLOG_LOG_SEGMENT_BYTES": "12MB"} if where == "env" else {}
    out = twinlog(*args, *(["--segment-bytes", "12MB"] if where == "flag" else []), env=env)
    origin = {"flag": "--segment-bytes", "env": "TWINLOG_LOG_SEGMENT_BYTES", "file": str(path)}[where]
    assert out.returncode == 2
    assert out.stderr.splitlines() == [f"Error: invalid value for log.segment.bytes (from {origin}): '12MB' is not an integer"]
    assert not data_dir.exists()  # refused before anything was written


def test_describe_configs_of_a_broker_started_with_file_env_and_flag(tmp_path, server_properties, monkeypatch, storage_mode):
    for key in [k for k in os.environ if k.startswith("TWINLOG_") and k != "TWINLOG_COMPAT_BROKER"]:
        monkeypatch.delenv(key)
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    proc = BrokerProcess(storage_mode=storage_mode, workdir=tmp_path / "broker",
                         extra_args=["--config", str(server_properties), *FLAGS])
    try:
        proc.start()
        with Client.to(proc) as c:
            r = c.request(32, 4, include_synonyms=False, include_documentation=False, resources=[
                {"resource_type": BROKER_RESOURCE, "resource_name": "1", "configuration_keys": None}])
            (result,) = r.results
            entries = {e.name: e for e in result.configs}
            c.create_topic("broker-default-partitions", -1)  # -1: num.partitions
            (created,) = c.metadata(["broker-default-partitions"]).topics
    finally:
        proc.stop()
    log = proc.log_path.read_text()
    assert result.error_code == 0
    shown = {name: (entries[name].value, entries[name].config_source) for name in
             ("log.retention.ms", "num.partitions", "log.segment.bytes", "port", "log.cleaner.threads")}
    assert shown == {"log.retention.ms": ("333333", STATIC_BROKER_CONFIG), "num.partitions": ("4", STATIC_BROKER_CONFIG),
                     "log.segment.bytes": ("2000000", STATIC_BROKER_CONFIG),
                     "port": (str(proc.port), STATIC_BROKER_CONFIG), "log.cleaner.threads": ("1", DEFAULT_CONFIG)}
    password = entries["ssl.key.password"]
    assert (password.value, password.is_sensitive, password.config_source) == (None, True, STATIC_BROKER_CONFIG)
    assert len(created.partitions) == 4  # the broker runs with the value it reports
    assert f"Warning: {server_properties}: 'num.network.threads' is not a twinlog setting; skipped" in log


def test_a_broker_given_retention_in_hours_keeps_topics_that_long(tmp_path, monkeypatch, storage_mode):
    """log.retention.hours, as Kafka's stock server.properties writes it, is every topic's
    retention.ms default (a topic without its own shows the broker's, 3,600,000)."""
    for key in [k for k in os.environ if k.startswith("TWINLOG_") and k != "TWINLOG_COMPAT_BROKER"]:
        monkeypatch.delenv(key)
    path = tmp_path / "server.properties"
    path.write_text("log.retention.hours=1\n")
    proc = BrokerProcess(storage_mode=storage_mode, workdir=tmp_path / "broker", extra_args=["--config", str(path)])
    try:
        proc.start()
        with Client.to(proc) as c:
            c.create_topic("hour-retention", 1)
            r = c.request(32, 4, include_synonyms=False, include_documentation=False, resources=[
                {"resource_type": 2, "resource_name": "hour-retention", "configuration_keys": ["retention.ms"]}])
    finally:
        proc.stop()
    (result,) = r.results
    assert [(e.name, e.value) for e in result.configs] == [("retention.ms", "3600000")]


def test_advertised_listeners_alone_listen_where_the_broker_would_and_advertise_as_told(tmp_path, monkeypatch):
    """As a Kafka image's users set only KAFKA_ADVERTISED_LISTENERS: Kafka's listeners then is
    PLAINTEXT://:9092, here PLAINTEXT on --host/--port. Before, the broker exited with
    "--advertised-listeners ... need --listeners"."""
    for key in [k for k in os.environ if k.startswith("TWINLOG_") and k != "TWINLOG_COMPAT_BROKER"]:
        monkeypatch.delenv(key)
    proc = BrokerProcess(workdir=tmp_path / "broker")
    monkeypatch.setenv("TWINLOG_ADVERTISED_LISTENERS", f"PLAINTEXT://localhost:{proc.port}")
    try:
        proc.start()
        with Client.to(proc) as c:
            brokers = [(b.host, b.port) for b in c.metadata([]).brokers]
    finally:
        proc.stop()
    assert brokers == [("localhost", proc.port)]
