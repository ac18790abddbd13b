"""librdkafka's mock cluster as a broker process of its own: the load generator's ceiling with
topics of any partition count, placed on the CPUs the broker under test gets.

`test.mock.num.brokers` starts the mock inside the client process, on the client's CPU, and it
makes topics of one partition only (it serves no CreateTopics). This module runs the mock in a
child process instead, through the C API of the librdkafka that confluent-kafka's wheel ships
(ctypes; rd_kafka_mock_cluster_new and rd_kafka_mock_topic_create), so a 64-partition cell can
be held against a 64-partition mock, and the mock's CPU time is read like a broker's.

    with MockCluster(cpus={0}) as mock:
        mock.create_topic("t", 64)
        ... run_phase(worker, [{"bootstrap": mock.bootstrap, ...}], budget, mock)

The child reads commands on stdin, one a line ("topic NAME PARTITIONS"), and answers each on
stdout ("ok" or "error CODE"); its first line is the cluster's bootstrap address. It exits when
stdin closes.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

from broker_launcher import BrokerError, cpu_seconds, pinned


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka

    libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so*"))
    if not found:
        raise BrokerError(f"no librdkafka in {libs}: the mock cluster needs confluent-kafka's wheel")
    lib = ctypes.CDLL(str(found[0]))
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    return lib


def serve() -> None:
    """The child: one mock broker, topics made on request, until stdin closes."""
    lib = _librdkafka()
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    # The handle only owns the mock; it never connects anywhere.
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
    handle = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # 0: RD_KAFKA_PRODUCER
    if not handle:
        raise SystemExit(f"rd_kafka_new: {errstr.value.decode()}")
    cluster = lib.rd_kafka_mock_cluster_new(handle, 1)
    print(lib.rd_kafka_mock_cluster_bootstraps(cluster).decode(), flush=True)
    for line in sys.stdin:
        verb, name, partitions = line.split()
        assert verb == "topic", line
        code = lib.rd_kafka_mock_topic_create(cluster, name.encode(), int(partitions), 1)
        print("ok" if code == 0 else f"error {code}", flush=True)


class MockCluster:
    """The mock as a child process; `bootstrap`, `cpu_seconds()` and `check_alive()` as
    broker_launcher.BrokerProcess has them, so run_phase measures it the same way."""

    def __init__(self, cpus: set[int] | None = None) -> None:
        self.proc = subprocess.Popen(pinned([sys.executable, __file__], cpus), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.bootstrap = self._answer()

    def _answer(self) -> str:
        line = self.proc.stdout.readline().strip()
        if not line:
            raise BrokerError(f"the mock cluster exited (code {self.proc.wait()})")
        return line

    def create_topic(self, name: str, partitions: int) -> None:
        self.proc.stdin.write(f"topic {name} {partitions}\n")
        self.proc.stdin.flush()
        answer = self._answer()
        if answer != "ok":
            raise BrokerError(f"mock topic {name} ({partitions} partitions): {answer}")

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise BrokerError(f"the mock cluster is not running (exit code {self.proc.returncode})")

    def cpu_seconds(self) -> float:
        self.check_alive()
        return cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    serve()
