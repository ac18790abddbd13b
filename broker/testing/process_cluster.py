"""A real twinlog cluster for tests and demos: one etcd and `size` brokers on loopback.

    from broker.testing.process_cluster import TwinlogProcessCluster

    with TwinlogProcessCluster(storage_mode="commitlog") as cluster:
        cluster.create_topic("orders", partitions=3)
        node = cluster.leader("orders", 0)
        cluster.kill(node)          # SIGKILL; another replica takes over
        cluster.restart(node)       # back on its port, with its data

Brokers are node ids 1..size, each a TwinlogBroker on a fixed port (so a restarted broker is
found where it was) with `--etcd` pointing at an EtcdProcess (etcd_process.py, Debian's etcd).
They run with short timeouts so a failover takes seconds, not Kafka's defaults: a 2 s etcd
session (broker.session.timeout.ms, 9 s in Kafka) and replica.lag.time.max.ms of 2 s (30 s).
A later flag wins, so `extra_args` can set either back. `keep` leaves etcd's and the brokers'
directories behind.
"""

from __future__ import annotations

import time

from broker.cli.kafka_client import ClientError, KafkaClient, partition_leaders
from broker.testing.etcd_process import EtcdProcess
from broker.testing.ports import free_port
from broker.testing.twinlog_broker import TwinlogBroker, create_topic

SESSION_MS = 2000
LAG_MS = 2000


def member_flags(node: int, etcd_endpoint: str) -> list[str]:
    """The `serve` flags that make a broker node `node` of a test cluster."""
    return ["--node-id", str(node), "--etcd", etcd_endpoint, "--broker-session-timeout-ms", str(SESSION_MS),
            "--replica-lag-time-max-ms", str(LAG_MS), "--group-initial-rebalance-delay-ms", "0",
            "--group-min-session-timeout-ms", "1000"]


class TwinlogProcessCluster:
    def __init__(self, storage_mode: str = "segment", size: int = 3, extra_args: tuple[str, ...] = (),
                 keep: bool = False) -> None:
        self.storage_mode = storage_mode
        self.keep = keep
        self.etcd = EtcdProcess()
        self._size = size
        self._extra_args = extra_args
        self.brokers: dict[int, TwinlogBroker] = {}

    def start(self) -> "TwinlogProcessCluster":
        self.etcd.start()
        for node in range(1, self._size + 1):
            broker = TwinlogBroker(self.storage_mode, [*member_flags(node, self.etcd.endpoint), *self._extra_args],
                                   port=free_port(), keep=self.keep)
            self.brokers[node] = broker
            broker.start()
        self._wait(lambda md: len(md.brokers) == self._size, "every broker registered")
        return self

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.stop()
        if self.keep:
            self.etcd.kill()
        else:
            self.etcd.cleanup()

    def __enter__(self) -> "TwinlogProcessCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        """Every broker, stopped ones included, as a client's configuration would list them."""
        return ",".join(b.bootstrap_servers for b in self.brokers.values())

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: dict[str, str] | None = None) -> None:
        create_topic(self._live().bootstrap_servers, name, partitions, configs, replication_factor)

    def leader(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """The node id leading topic-partition once one does (none while an election is on)."""
        md = self._wait(lambda md: partition_leaders(md, [topic]).get((topic, partition), -1) > 0,
                        f"a leader of {topic}-{partition}", timeout)
        return partition_leaders(md, [topic])[(topic, partition)]

    def kill(self, node: int) -> None:
        self.brokers[node].kill()

    def restart(self, node: int) -> None:
        self.brokers[node].start()

    def _live(self) -> TwinlogBroker:
        for broker in self.brokers.values():
            if broker.is_running():
                return broker
        raise ClientError("no broker of the cluster is running")

    def _wait(self, done, what: str, timeout: float = 30.0):
        """Metadata from a live broker until `done(metadata)`; elections and restarts take seconds."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                with KafkaClient(self._live().bootstrap_servers, client_id="twinlog-testing", timeout_s=5) as c:
                    md = c.metadata(None)
                if done(md):
                    return md
                last = md
            except (OSError, ClientError) as exc:
                last = exc
            time.sleep(0.1)
        raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}; last answer: {last}")
