"""Operating a broker safely (issue 16 item 3), each against real `twinlog serve` processes:

- one broker per data dir (Kafka's `.lock`), also for a cluster member;
- `--port 0` listens on a free port, logs it, and Metadata advertises it to a real client;
- SIGTERM right after the port opens is a clean shutdown, not the default action's exit;
- an operator's mistake (port in use, bad --log-level, data dir that is a file) is one error
  line and a non-zero exit, no traceback, and nothing is written to the data dir;
- flush.messages = N fsyncs the log once per N messages (fsyncs counted with strace);
- recovery logs what it truncated: partition, bytes, time taken;
- `--version`, and how long `--help` takes (reported, asserted only loosely).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from compat_tests.helpers.broker_process import BrokerProcess, api_versions_roundtrip, free_port
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
_CLI = ROOT / ".venv" / "bin" / "twinlog"
TWINLOG = [str(_CLI)] if _CLI.exists() else [sys.executable, "-m", "broker"]


def twinlog(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    return subprocess.run([*TWINLOG, *args], capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(result: subprocess.CompletedProcess, expected: str) -> None:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line or line.startswith("Error")]
    assert len(errors) == 1 and expected in errors[0], result.stderr


# ----- the data-dir lock -----------------------------------------------------------------------

def test_a_second_broker_on_the_same_data_dir_refuses(broker_factory, storage_mode):
    first = broker_factory()
    second = twinlog("serve", "--data-dir", str(first.data_dir), "--port", str(free_port()),
                     "--storage-mode", storage_mode)
    assert_one_line_error(second, "in use by another broker")
    api_versions_roundtrip(first.host, first.port)  # the first one serves on, untouched
    first.kill()  # the lock is the kernel's: a SIGKILLed broker leaves the file, not the lock
    first.start()


def test_a_second_cluster_member_on_the_same_data_dir_refuses(tmp_path):
    from compat_tests.helpers.cluster import running_cluster

    with running_cluster("segment", size=1) as cluster:
        member = cluster.brokers[1]
        second = twinlog("serve", "--data-dir", str(member.data_dir), "--port", str(free_port()),
                         "--etcd", cluster.etcd.endpoint, "--node-id", "2")
        assert_one_line_error(second, "in use by another broker")
        assert set(cluster.metadata()["brokers"]) == {1}  # it never registered


# ----- port 0 and signals ------------------------------------------------------------------------

def _start_and_read_port(data_dir: Path, log_path: Path, *args: str) -> tuple[subprocess.Popen, int]:
    log = open(log_path, "wb")
    proc = subprocess.Popen([*TWINLOG, "serve", "--data-dir", str(data_dir), *args], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    def port_line() -> re.Match | None:
        assert proc.poll() is None, log_path.read_text()
        return re.search(r"listening on 127\.0\.0\.1:(\d+)", log_path.read_text())

    try:
        found = wait_until(port_line, "a 'listening on' line", timeout=30, interval=0.05)
    except AssertionError:
        proc.kill()
        raise
    return proc, int(found.group(1))


def test_port_zero_is_the_real_port_in_metadata(tmp_path, storage_mode):
    from confluent_kafka.admin import AdminClient

    proc, port = _start_and_read_port(tmp_path / "data", tmp_path / "broker.log", "--port", "0",
                                      "--storage-mode", storage_mode)
    try:
        assert port != 0
        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=10)
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [("127.0.0.1", port)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_sigterm_right_after_the_port_opens_is_a_clean_shutdown(tmp_path, storage_mode):
    port = free_port()
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*TWINLOG, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port),
                                 "--storage-mode", storage_mode], stdout=log, stderr=subprocess.STDOUT)
    try:
        def port_open() -> bool:
            assert proc.poll() is None, log_path.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False

        # Polled every millisecond: the SIGTERM is to come right after the port opens.
        wait_until(port_open, f"port {port} open", timeout=30, interval=0.001)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, log_path.read_text()
    finally:
        proc.kill()
    assert "broker stopped cleanly" in log_path.read_text()


# ----- operator mistakes ---------------------------------------------------------------------------

def test_port_in_use_is_one_line_and_writes_nothing(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = twinlog("serve", "--data-dir", str(tmp_path / "data"), "--port", str(taken.getsockname()[1]))
    assert_one_line_error(result, "Address already in use")
    assert not (tmp_path / "data" / "meta.properties").exists()


def test_bad_log_level_is_one_line(tmp_path):
    assert_one_line_error(twinlog("serve", "--data-dir", str(tmp_path / "data"), "--log-level", "LOUD"),
                          "--log-level")


def test_data_dir_that_is_a_file_is_one_line(tmp_path):
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    assert_one_line_error(twinlog("serve", "--data-dir", str(a_file), "--port", "0"), "not a directory")


# ----- flush.messages = N --------------------------------------------------------------------------

def _log_fsyncs(strace_out: Path, storage_mode: str, topic: str) -> int:
    """fsync/fdatasync calls on the partition's log file (segment) or the commitlog."""
    wanted = f"/{topic}-0/" if storage_mode == "segment" else "/commitlog-store/commitlog/"
    count = 0
    for line in strace_out.read_text().splitlines():
        call = re.search(r"\b(fsync|fdatasync)\(\d+<([^>]*)>", line)
        if call and wanted in call.group(2) and (storage_mode != "segment" or call.group(2).endswith(".log")):
            count += 1
    return count


def test_flush_messages_n_fsyncs_once_per_n_messages(tmp_path, storage_mode):
    """50 produce requests of 20 messages to a topic with flush.messages=100: Kafka fsyncs the
    log when the unflushed count reaches 100, so 10 times (before: never, only 1 was honoured)."""
    strace_out = tmp_path / "strace.txt"
    proc = BrokerProcess(storage_mode=storage_mode)
    plain = proc.command
    proc.command = lambda: ["strace", "-f", "-y", "--seccomp-bpf", "-e", "trace=fsync,fdatasync",
                            "-o", str(strace_out), *plain()]
    try:
        proc.start()
        topic = unique_topic("flushn")
        with Client.to(proc) as c:
            c.create_topic(topic, 1, {"flush.messages": "100"})
            for i in range(50):
                p = c.produce(topic, 0, make_batch([b"m%d-%d" % (i, j) for j in range(20)]), acks=1)
                assert p.error_code == 0 and p.base_offset == 20 * i, p
        # SIGKILL the broker (strace's child), so no shutdown flush is counted; strace then
        # exits by itself and writes out everything it saw.
        (child,) = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        os.kill(int(child), signal.SIGKILL)
        proc._proc.wait(20)
        fsyncs = _log_fsyncs(strace_out, storage_mode, topic)
        print(f"{storage_mode}: {fsyncs} fsyncs of the log for 1,000 messages at flush.messages=100")
        assert fsyncs == 10
    finally:
        proc.cleanup()


# ----- recovery logs what it cut ---------------------------------------------------------------------

def _tear_tail(data_dir: Path, storage_mode: str, topic: str) -> None:
    """Append the first 100 bytes of the partition's first stored batch / unit after its valid
    end: a write torn by a crash, as it looks on disk."""
    if storage_mode == "segment":
        (log_file,) = (data_dir / f"{topic}-0").glob("*.log")
        data = log_file.read_bytes()
        with open(log_file, "ab") as f:
            f.write(data[:100])
        return
    from segment.rocket import unit_format as uf

    first = sorted((data_dir / "commitlog-store" / "commitlog").iterdir())[0]
    data = first.read_bytes()
    pos, torn_copy = 0, None
    while True:
        total, magic = uf.peek_prefix(data, pos)
        if total == 0:
            break
        if magic == uf.MESSAGE and data[pos + uf.FIXED.size:].startswith(topic.encode()):
            torn_copy = data[pos:pos + 100]
        pos += total
    with open(first, "r+b") as f:
        f.seek(pos)
        f.write(torn_copy)


def test_recovery_logs_the_torn_tail_it_cut(broker_factory, storage_mode):
    broker = broker_factory()
    topic = unique_topic("torn")
    with Client.to(broker) as c:
        c.create_topic(topic, 1)
        assert c.produce(topic, 0, make_batch([b"r%d" % i for i in range(10)]), acks=1).error_code == 0
    broker.kill()
    _tear_tail(broker.data_dir, storage_mode, topic)
    since = broker.log_size()
    broker.start()
    lines = [line for line in broker.log_text(since).splitlines() if "recovery truncated 100 bytes" in line]
    assert len(lines) == 1, broker.log_tail(since=since)
    assert f"{topic}-0" in lines[0] and re.search(r"took \d+\.\d ms", lines[0]), lines[0]
    with Client.to(broker) as c:
        assert c.produce(topic, 0, make_batch([b"after"]), acks=1).base_offset == 10


# ----- --version and --help ------------------------------------------------------------------------

def test_version():
    from importlib.metadata import version

    result = twinlog("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"twinlog, version {version('twinlog')}"


def test_help_loads_neither_the_broker_nor_the_codec_nor_an_engine():
    """`twinlog --help` (and every client command's parsing) imports click and the settings
    table, not what serving needs: the broker, the codec's ~2,000 classes, either storage
    engine or the etcd client. Before lazy imports --help took 1.8-2.4 s, after 0.17-0.4 s;
    what it loads is asserted here, not its time, which a shared machine stretches at will."""
    command = TWINLOG[1:] if TWINLOG[0] == sys.executable else TWINLOG  # the script, or -m broker
    result = subprocess.run([sys.executable, "-X", "importtime", *command, "--help"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and "serve" in result.stdout, result.stderr
    loaded = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "click" in loaded and "broker.settings.table" in loaded  # the probe sees this process's imports
    heavy = ("broker.broker", "broker.lifecycle", "kio", "wire.protocol", "segment.kafka", "segment.rocket",
             "aetcd", "grpc")
    assert sorted(m for m in loaded if m.startswith(heavy)) == []
