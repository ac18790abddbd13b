"""The cluster the replicated benchmark (replicated.py) runs against: one etcd and three
`twinlog serve --etcd` brokers on loopback, all sharing this machine's cores (no pinning: three
brokers and a load generator on two cores cannot each have one, so CPU is reported instead).

etcd is compat_tests' EtcdProcess (short raft timeouts, so its 1 s minimum lease TTL allows a
2 s session); the brokers are bench's BrokerProcess. Each broker keeps its data directory for
the life of the cluster, so a broker SIGKILLed by the failover cells restarts on its own log.
`cpu` is an object run_phase can sample like one broker: it answers the sum of the three and
keeps each broker's share of the last window.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402
from broker.testing.etcd_process import EtcdProcess  # noqa: E402
from load_workers import PhaseError  # noqa: E402

NODES = (1, 2, 3)


class ClusterCpu:
    """run_phase's `broker` argument: cpu_seconds() sums the brokers and remembers each one's
    reading, so per_broker() gives every broker's CPU seconds between the last two calls."""

    def __init__(self, cluster: "ReplicatedCluster"):
        self.cluster, self.readings = cluster, []

    def cpu_seconds(self) -> float:
        reading = {n: b.cpu_seconds() for n, b in self.cluster.brokers.items()}
        self.readings = (self.readings + [reading])[-2:]
        return sum(reading.values())

    def check_alive(self) -> None:
        for b in self.cluster.brokers.values():
            b.check_alive()

    def per_broker(self) -> dict[int, float]:
        before, after = self.readings
        return {n: after[n] - before[n] for n in after}


class ReplicatedCluster:
    def __init__(self, mode: str, session_ms: int, work: Path, broker_args: tuple[str, ...] = ()):
        self.mode, self.session_ms, self.broker_args = mode, session_ms, list(broker_args)
        self.work = Path(tempfile.mkdtemp(prefix=f"cluster-{mode}-", dir=work))
        self.etcd = EtcdProcess(self.work / "etcd")
        self.brokers: dict[int, BrokerProcess] = {}
        self.cpu = ClusterCpu(self)

    def __enter__(self) -> "ReplicatedCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        (self.work / "etcd").mkdir()
        self.etcd.start()
        for node in NODES:
            data = self.work / f"broker-{node}"
            data.mkdir()
            port = free_port()
            extra = ["--node-id", str(node), "--etcd", self.etcd.endpoint, "--storage-mode", self.mode,
                     "--broker-session-timeout-ms", str(self.session_ms), *self.broker_args]
            cmd = broker_command("twinlog", None, extra, data, "127.0.0.1", port)
            self.brokers[node] = BrokerProcess(cmd, "127.0.0.1", port, self.work / f"broker-{node}.log")
            self.brokers[node].start()
        self.wait_for(lambda md: len(md.brokers) == len(NODES), "every broker registered", 60)

    def stop(self) -> None:
        for b in self.brokers.values():
            b.stop()
        self.etcd.cleanup()
        shutil.rmtree(self.work, ignore_errors=True)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.proc and b.proc.poll() is None)

    def metadata(self, topic: str | None = None):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0}).list_topics(topic, timeout=5)

    def wait_for(self, predicate, what: str, timeout: float = 60.0):
        deadline, last = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try:
                md = self.metadata()
                if predicate(md):
                    return md
            except Exception as e:  # noqa: BLE001 - a broker mid-restart; asked again below
                last = e
            time.sleep(0.1)
        raise PhaseError(f"cluster: timed out waiting for {what} ({last})")

    def create_topic(self, topic: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        for f in admin.create_topics([NewTopic(topic, partitions, rf, config=configs)], request_timeout=60).values():
            f.result(timeout=60)
        self.wait_for(lambda md: self.whole(md, topic, partitions, rf), f"{topic}: leaders and full ISRs")

    @staticmethod
    def whole(md, topic: str, partitions: int, rf: int) -> bool:
        t = md.topics.get(topic)
        return bool(t) and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 and len(p.isrs) == rf for p in t.partitions.values())

    def kill(self, node: int) -> None:
        """SIGKILL, as a crash: no flush, no clean-shutdown marker, the etcd lease left to expire."""
        proc = self.brokers[node].proc
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def terminate(self, node: int) -> None:
        """SIGTERM, as a rolling restart stops a broker: it hands its leaderships over first."""
        self.brokers[node].stop()

    def restart(self, node: int) -> None:
        self.brokers[node].start(timeout=60)
