"""The `twinlog` client commands (broker/cli_*.py) as an operator runs them: `.venv/bin/twinlog ...`
subprocesses against a real broker of each layout (one per layout, shared by the module), with
real clients (confluent-kafka) on the other side where a command's effect must be seen by one.
`dump` reads the files that broker wrote. One test runs `cluster status` against a two-broker
cluster with one broker stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from compat_tests.helpers.broker_process import ROOT, BrokerProcess, free_port
from compat_tests.helpers.topics import unique_topic

TWINLOG = str(ROOT / ".venv" / "bin" / "twinlog")
_ENV: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _without_client_libraries(tmp_path_factory):
    """Every command runs with kafka-python and confluent-kafka unimportable: they are test
    extras, and `make serve` installs neither."""
    shadow = tmp_path_factory.mktemp("no-client-libraries")
    for package in ("kafka", "confluent_kafka"):
        (shadow / package).mkdir()
        (shadow / package / "__init__.py").write_text(f"raise ImportError('{package} is a test extra')\n")
    _ENV["PYTHONPATH"] = os.pathsep.join([str(shadow), str(ROOT)])  # ROOT: this checkout, not the venv's install
    yield
    _ENV.clear()


@pytest.fixture(scope="module")
def cli_broker(storage_mode):
    proc = BrokerProcess(storage_mode=storage_mode, extra_args=[
        "--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "1000"])
    try:
        yield proc.start()
    finally:
        proc.cleanup()


def twinlog(broker, *args: str, stdin: str | None = None, check: bool = True, env: dict | None = None,
            ) -> subprocess.CompletedProcess:
    environment = {**os.environ, "TWINLOG_BOOTSTRAP": broker.bootstrap, **_ENV, **(env or {})}
    out = subprocess.run([TWINLOG, *args], input=stdin, capture_output=True, text=True, timeout=60,
                         env=environment)
    if check:
        assert out.returncode == 0, f"twinlog {' '.join(args)}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def one_line_error(out: subprocess.CompletedProcess, *words: str) -> str:
    """The command failed with a single `Error: ...` line on stderr and no traceback."""
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), out.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def table(text: str, first: str) -> list[list[str]]:
    """The whitespace-split rows of the plain table whose header row starts with `first`, up to
    a blank line or the next table's one-word title."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first])
    out = []
    for line in lines[start + 1:]:
        if not line.strip() or line[0] != " " and len(line.split()) == 1:
            break
        out.append(line.split())
    return out


def test_topics_create_describe_alter_add_delete(cli_broker):
    b, name = cli_broker, unique_topic("cli-topics")
    out = twinlog(b, "topics", "create", name, "-p", "3", "-c", "retention.ms=3600000")
    assert [name, "OK"] in table(out.stdout, "TOPIC")
    assert name in [r[0] for r in table(twinlog(b, "topics", "list").stdout, "NAME")]
    described = twinlog(b, "topics", "describe", name).stdout
    partitions = table(described, "PARTITION")
    assert [r[0] for r in partitions] == ["0", "1", "2"] and all(r[1] == "1" for r in partitions)
    assert ["retention.ms", "3600000", "topic"] in table(described, "KEY")

    twinlog(b, "topics", "alter-config", name, "--set", "retention.ms=60000", "--set", "cleanup.policy=compact")
    assert "3 -> 5 partitions" in twinlog(b, "topics", "add-partitions", name, "-n", "2").stdout
    described = twinlog(b, "topics", "describe", name).stdout
    configs = table(described, "KEY")
    assert ["retention.ms", "60000", "topic"] in configs and ["cleanup.policy", "compact", "topic"] in configs
    assert len(table(described, "PARTITION")) == 5

    assert [name, "OK"] in table(twinlog(b, "topics", "delete", name).stdout, "TOPIC")
    one_line_error(twinlog(b, "topics", "describe", name, check=False), name, "UNKNOWN_TOPIC_OR_PARTITION")


def test_produce_lines_then_consume_them_back(cli_broker):
    b, name = cli_broker, unique_topic("cli-produce")
    twinlog(b, "topics", "create", name, "-p", "3")
    lines = [f"key-{i}:value {i}" for i in range(100)]
    out = twinlog(b, "produce", name, "-k", ":", "-H", "source=cli", "-H", "n=1", stdin="\n".join(lines) + "\n")
    assert out.stdout.startswith(f"produced 100 record(s) to {name}")

    out = twinlog(b, "consume", name, "--from-beginning", "-e", "-f", "json")
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert "consumed 100 record(s)" in out.stderr
    assert sorted((r["key"], r["value"]) for r in got) == sorted((f"key-{i}", f"value {i}") for i in range(100))
    assert all(r["headers"] == {"source": "cli", "n": "1"} for r in got)
    # Keyed records land where Kafka's default partitioner (murmur2) puts them: librdkafka agrees.
    from confluent_kafka import Producer

    check_topic = unique_topic("cli-partitioner")
    twinlog(b, "topics", "create", check_topic, "-p", "3")
    producer = Producer({"bootstrap.servers": b.bootstrap, "partitioner": "murmur2_random"})
    placed = {}
    for i in range(100):
        producer.produce(check_topic, key=f"key-{i}", value=b"x",
                         on_delivery=lambda err, m: placed.__setitem__(m.key().decode(), m.partition()))
    producer.flush(30)
    assert {r["key"]: r["partition"] for r in got} == placed

    # A real consumer reads the CLI's batches.
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "cli-reader", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(name, p, 0) for p in range(3)])
        seen, deadline = [], time.monotonic() + 20
        while len(seen) < 100 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.append((m.key().decode(), m.value().decode(), dict((k, v.decode()) for k, v in m.headers())))
        assert sorted(seen) == sorted((f"key-{i}", f"value {i}", {"source": "cli", "n": "1"}) for i in range(100))
    finally:
        c.close()

    template = twinlog(b, "consume", name, "-p", "1", "-o", "2", "-n", "1", "-f", "%p/%o %k=%v").stdout
    partition1 = sorted((r["offset"], r["key"], r["value"]) for r in got if r["partition"] == 1)
    assert template == f"1/2 {partition1[2][1]}={partition1[2][2]}\n"
    assert twinlog(b, "consume", name, "--offset", "end", "-e").stdout == ""
    assert twinlog(b, "consume", name, "--timestamp", str(int(time.time() * 1000) + 60_000), "-e").stdout == ""
    assert len(twinlog(b, "consume", name, "--timestamp", "0", "-e").stdout.splitlines()) == 100


def test_groups_describe_lag_reset_and_delete(cli_broker):
    b, name, group = cli_broker, unique_topic("cli-groups"), unique_topic("cli-group")
    twinlog(b, "topics", "create", name, "-p", "1")
    twinlog(b, "produce", name, stdin="".join(f"m{i}\n" for i in range(10)))
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        c.subscribe([name])
        taken, deadline = [], time.monotonic() + 20
        while len(taken) < 4 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                taken.append(m)
        c.commit(offsets=[TopicPartition(name, 0, taken[3].offset() + 1)], asynchronous=False)
        live = twinlog(b, "groups", "describe", group).stdout
        assert f"group {group}  state Stable" in live
        (row,) = table(live, "TOPIC")
        assert row[:5] == [name, "0", "4", "10", "6"] and row[5].startswith("rdkafka")
        refused = twinlog(b, "groups", "reset-offsets", group, "--to-earliest", check=False)
        one_line_error(refused, "no members")
    finally:
        c.close()
    assert [group, "Empty", "consumer", "1"] in table(twinlog(b, "groups", "list").stdout, "GROUP")

    reset = twinlog(b, "groups", "reset-offsets", group, "--to-earliest").stdout
    assert [name, "0", "4", "0"] in table(reset, "TOPIC")
    (row,) = table(twinlog(b, "groups", "describe", group).stdout, "TOPIC")
    assert row[:5] == [name, "0", "0", "10", "10"]
    shifted = twinlog(b, "groups", "reset-offsets", group, "--shift-by", "3", "--dry-run").stdout
    assert [name, "0", "0", "3"] in table(shifted, "TOPIC")

    # consume --group starts at the committed offset and commits what it printed.
    assert twinlog(b, "consume", name, "-g", group, "-n", "2").stdout == "m0\nm1\n"
    assert twinlog(b, "consume", name, "-g", group, "-e").stdout == "".join(f"m{i}\n" for i in range(2, 10))
    (row,) = table(twinlog(b, "groups", "describe", group).stdout, "TOPIC")
    assert row[2:5] == ["10", "10", "0"]

    assert [group, "OK"] in table(twinlog(b, "groups", "delete", group).stdout, "GROUP")
    assert group not in twinlog(b, "groups", "list").stdout


def test_groups_describe_a_consumer_protocol_group(cli_broker):
    """A KIP-848 group (group.protocol=consumer) is not one DescribeGroups describes (v6 answers
    GROUP_ID_NOT_FOUND): `groups describe` asks ConsumerGroupDescribe, so a live group that has
    committed nothing yet is shown, not called missing (exit 1)."""
    b, name, group = cli_broker, unique_topic("cli-kip848"), unique_topic("cli-kip848-group")
    twinlog(b, "topics", "create", name, "-p", "2")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": "consumer",
                  "enable.auto.commit": False})
    try:
        c.subscribe([name])
        deadline = time.monotonic() + 30
        while len(c.assignment()) < 2 and time.monotonic() < deadline:
            c.poll(0.2)
        assert len(c.assignment()) == 2
        (described,) = json.loads(twinlog(b, "groups", "describe", group, "--format", "json").stdout)
        assert (described["type"], described["state"], described["members"]) == ("consumer", "Stable", 1)
        assert [(p["topic"], p["partition"], p["current_offset"]) for p in described["partitions"]] == \
            [(name, 0, None), (name, 1, None)]
        assert len({p["member_id"] for p in described["partitions"]}) == 1
    finally:
        c.close()


def test_dump_reads_the_files_the_broker_wrote(cli_broker, storage_mode):
    b, name = cli_broker, unique_topic("cli-dump")
    # an index entry for every batch but a segment's first (index files are made by their first)
    twinlog(b, "topics", "create", name, "-p", "1", "-c", "index.interval.bytes=1")
    for batch in range(3):
        twinlog(b, "produce", name, "-k", "=", stdin="".join(f"k{batch}=v{batch}-{i}\n" for i in range(5)))
    if storage_mode == "segment":
        folder = b.data_dir / f"{name}-0"
        out = twinlog(b, "dump", "-r", str(folder / "00000000000000000000.log")).stdout
        batches = [line for line in out.splitlines() if line.startswith("baseOffset:")]
        assert [line.split()[1:4:2] for line in batches] == [["0", "4"], ["5", "9"], ["10", "14"]]
        assert all("isvalid: true" in line and "compresscodec: none" in line for line in batches)
        assert "| offset: 7 " in out and "key: k1 payload: v1-2" in out
        index = twinlog(b, "dump", str(folder / "00000000000000000000.index"),
                        str(folder / "00000000000000000000.timeindex")).stdout
        assert "offset: 5 position: " in index and "offset: 0 position: 0" not in index and "(timeindex)" in index
    else:
        store = b.data_dir / "commitlog-store"
        files = sorted((store / "commitlog").iterdir())
        out = twinlog(b, "dump", "-r", *map(str, files)).stdout
        units = [line for line in out.splitlines() if " MESSAGE " in line and f"topic: {name} " in line]
        assert [line.split("baseOffset: ")[1].split()[0] for line in units] == ["0", "5", "10"]
        assert "key: k2 payload: v2-4" in out
        queue = store / "consumequeue" / name / "0" / "00000000000000000000"
        entries = twinlog(b, "dump", str(queue), str(queue) + ".time").stdout
        assert [line.split()[-1] for line in entries.splitlines() if " phys: " in line] == ["0", "5", "10"]
        assert "lastOffsetDelta: 4" in entries
        keys = twinlog(b, "dump", *map(str, sorted((store / "index").iterdir()))).stdout
        assert "hashSlotCount:" in keys and " keyHash: " in keys
    one_line_error(twinlog(b, "dump", str(b.data_dir / "meta.properties"), check=False), "--type")


def test_lookup_reads_a_commitlog_topic_and_refuses_a_segment_topic(cli_broker, storage_mode):
    b, name = cli_broker, unique_topic("cli-lookup")
    twinlog(b, "topics", "create", name, "-p", "2", "-c", f"storage.mode={storage_mode}")
    twinlog(b, "produce", name, "-k", ":", stdin="alice:1\nbob:2\nalice:3\ncarol:4\n")
    out = twinlog(b, "lookup", "--topic", name, "--key", "alice", check=False)
    if storage_mode == "commitlog":
        assert out.returncode == 0, out.stderr
        assert [line.split("\t")[3] for line in out.stdout.splitlines()] == ["1", "3"]
        assert "2 record(s) with key 'alice'" in out.stderr
    else:
        one_line_error(out, "no key lookup", name, "storage.mode=commitlog")


def test_a_command_leaves_no_hypothesis_directory_behind(cli_broker, tmp_path):
    """The codec registers Hypothesis strategies when Hypothesis is importable (it is, in this
    test venv), which costs 1.6 s and writes `.hypothesis/` into the working directory. A twinlog
    command never uses Hypothesis, so it never imports it."""
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    out = subprocess.run([TWINLOG, "topics", "list"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env={**env, "TWINLOG_BOOTSTRAP": cli_broker.bootstrap, **_ENV})
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / ".hypothesis").exists()


def test_quotas_alter_describe_and_delete(cli_broker):
    """`twinlog quotas`, as kafka-configs --entity-type users/clients: set, read back, refused, removed."""
    client = f"cli-{uuid.uuid4().hex[:8]}"
    twinlog(cli_broker, "quotas", "alter", "--clients", client, "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152")
    twinlog(cli_broker, "quotas", "alter", "--users", "alice", "--clients-default",
            "--add-config", "request_percentage=12.5")
    described = json.loads(twinlog(cli_broker, "quotas", "describe", "--clients", client, "--format", "json").stdout)
    assert described == [{"entity": {"client-id": client},
                          "quotas": {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0}}]
    rows = table(twinlog(cli_broker, "quotas", "describe").stdout, "ENTITY")
    assert ["client-id=<default>,", "user=alice", "request_percentage", "12.5"] in rows
    assert [f"client-id={client}", "producer_byte_rate", "1048576"] in rows
    one_line_error(twinlog(cli_broker, "quotas", "alter", "--clients", client, "--add-config", "bogus=1",
                           check=False), "INVALID_REQUEST", "Invalid configuration key bogus")
    twinlog(cli_broker, "quotas", "alter", "--clients", client,
            "--delete-config", "producer_byte_rate,consumer_byte_rate")
    twinlog(cli_broker, "quotas", "alter", "--users", "alice", "--clients-default",
            "--delete-config", "request_percentage")
    assert json.loads(twinlog(cli_broker, "quotas", "describe", "--clients", client, "--format", "json").stdout) == []


def test_cluster_status_and_connection_errors(cli_broker):
    out = twinlog(cli_broker, "cluster", "status").stdout
    assert "controller 1  brokers 1" in out and "under-replicated 0  offline 0" in out
    assert ["1", "127.0.0.1", str(cli_broker.port), "-", "controller"] in table(out, "ID")
    nowhere = f"127.0.0.1:{free_port()}"
    one_line_error(twinlog(cli_broker, "topics", "list", "-b", nowhere, check=False), "cannot connect", nowhere)


def test_cluster_status_reports_under_replicated_partitions():
    # One layout is enough for a cluster-wide view: the command reads Metadata only.
    from compat_tests.helpers.cluster import running_cluster

    with running_cluster("segment", size=2) as cluster:
        name = unique_topic("cli-cluster")
        cluster.create_topic(name, partitions=2, replication_factor=2)
        cluster.wait_for(lambda md: all(len(p["isr"]) == 2 for p in md["topics"][name].values()), "ISR whole")
        env = {"TWINLOG_BOOTSTRAP": cluster.bootstrap}
        healthy = twinlog(cluster.brokers[1], "cluster", "status", env=env).stdout
        assert "brokers 2" in healthy and "under-replicated 0  offline 0" in healthy
        cluster.brokers[2].stop()
        cluster.wait_for(lambda md: all(p["isr"] == [1] for p in md["topics"][name].values()), "ISR shrunk to 1")
        out = twinlog(cluster.brokers[1], "cluster", "status", env={"TWINLOG_BOOTSTRAP": cluster.bootstrap},
                      check=False)
        assert out.returncode == 2, out.stderr
        unhealthy = table(out.stdout, "TOPIC")
        assert [name, "0", "1", "1,2", "1"] in unhealthy or [name, "0", "1", "2,1", "1"] in unhealthy
