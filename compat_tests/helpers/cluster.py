"""A real cluster for tests: one etcd and three `twinlog serve --etcd` brokers on loopback.

`Cluster` starts them, knows which broker is which node id, and answers the questions the
replication scenarios ask: who leads a partition now (from any live broker's Metadata), wait
until the ISR is whole again, read every replica's log through Fetch with a replica id so
their batches can be compared byte for byte.

Brokers run with the short timeouts of broker/testing/process_cluster.py (member_flags), the
packaged cluster a user or the Spark demo starts; this one adds what the compat tests need:
BrokerProcess (kill -9, the Tansu peer), per-broker flags and byte-level replica reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from broker.testing.etcd_process import EtcdProcess
from broker.testing.process_cluster import member_flags
from compat_tests.helpers.broker_process import BrokerProcess, free_port
from compat_tests.helpers.raw_kafka import Client, batch_header, fetch_values, split_batches
from compat_tests.helpers.waiting import wait_until
from wire.error_codes import ErrorCode

# Kafka's debugging consumer id: any replica answers it, leader or follower, up to its HW.
REPLICA_READER = -2


def metadata_snapshot(host: str, port: int) -> dict:
    with Client(host, port) as c:
        md = c.metadata(None)
    return {
        "brokers": {b.node_id: b.port for b in md.brokers},
        "controller": md.controller_id,
        "topics": {t.name: {p.partition_index: {"leader": p.leader_id, "epoch": p.leader_epoch,
                                                "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes)}
                            for p in t.partitions}
                   for t in md.topics if t.error_code == 0},
    }


class Cluster:
    def __init__(self, storage_mode: str | tuple[str, ...], size: int = 3, extra_args: tuple[str, ...] = (),
                 broker_args: Callable[[int, int], list[str]] | None = None) -> None:
        """`storage_mode`: every broker's, or one per broker (node 1's first: each holds its
        replicas in its own layout); `broker_args(node id, port)`: more flags for one broker
        (its own listeners, say); `port` is the one the fixture asks Metadata on, so it must
        stay a PLAINTEXT listener."""
        self.etcd = EtcdProcess()
        modes = (storage_mode,) * size if isinstance(storage_mode, str) else storage_mode
        self.storage_mode = storage_mode
        ports = [free_port() for _ in range(size)]
        self.brokers = {
            node: BrokerProcess(storage_mode=mode, port=port, extra_args=[
                *member_flags(node, ""), *extra_args, *(broker_args(node, port) if broker_args else ())])
            for node, port, mode in zip(range(1, size + 1), ports, modes)
        }

    def start(self) -> "Cluster":
        self.etcd.start()
        for proc in self.brokers.values():
            i = proc.extra_args.index("--etcd")
            proc.extra_args[i + 1] = self.etcd.endpoint
            proc.start()
        self.wait_for(lambda md: len(md["brokers"]) == len(self.brokers), "every broker registered")
        return self

    @property
    def bootstrap(self) -> str:
        return ",".join(p.bootstrap for p in self.brokers.values() if p.is_running())

    def admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10000)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: dict | None = None) -> None:
        admin = self.admin()
        try:
            admin.create_topics([NewTopic(name, partitions, replication_factor, topic_configs=configs or {})])
        finally:
            admin.close()
        md = self.wait_for(lambda md: all(p["leader"] >= 0 for p in md["topics"].get(name, {}).values())
                           and len(md["topics"].get(name, {})) == partitions, f"{name} has leaders")
        # One broker's Metadata shows the leaders before each leader has opened its partition (it
        # answers UNKNOWN_TOPIC_OR_PARTITION until then): wait until every leader answers
        # ListOffsets, as a client would retry, so a test's first raw produce finds it.
        for index, state in md["topics"][name].items():
            self.wait_led_here(name, index, state["leader"])

    def wait_led_here(self, topic: str, index: int, node: int, timeout: float = 30.0) -> None:
        proc = self.brokers[node]

        def answers() -> bool:
            try:
                with Client(proc.host, proc.port) as c:
                    return c.list_offset(topic, index, -1).error_code == 0
            except OSError:
                return False

        wait_until(answers, f"broker {node} answering for {topic}-{index}", timeout=timeout, interval=0.05)

    def metadata(self) -> dict:
        """{"brokers": {id: port}, "topics": {name: {index: {"leader", "epoch", "replicas", "isr"}}}}
        from the first live broker that answers."""
        last = None
        for proc in self.brokers.values():
            if proc.is_running():
                try:
                    return metadata_snapshot(proc.host, proc.port)
                except OSError as exc:
                    last = exc
        raise ConnectionError(f"no broker answered Metadata: {last}")

    def replica_bytes(self, node: int, topic: str, index: int = 0) -> bytes:
        """Every batch of one replica's log up to its high watermark (Fetch with Kafka's
        debugging replica id, which followers answer too)."""
        copy = self.replica_copy(node, topic, index)
        assert copy is not None, f"node {node} {topic}-{index}: not opened there (UNKNOWN_TOPIC_OR_PARTITION)"
        return copy

    def replica_copy(self, node: int, topic: str, index: int = 0) -> bytes | None:
        """replica_bytes, or None while the broker has not opened the partition: it answers
        UNKNOWN_TOPIC_OR_PARTITION until it applied the metadata placing a replica there,
        which on a loaded machine can be after the leader already took records."""
        proc = self.brokers[node]
        with Client(proc.host, proc.port) as c:
            out, offset = b"", 0
            while True:
                values = fetch_values([(topic, [(index, offset, 10 << 20)])])
                values["replica_id"] = REPLICA_READER
                resp = c.request(1, 12, **values)
                (p,) = resp.responses[0].partitions
                if p.error_code == ErrorCode.unknown_topic_or_partition and offset == 0:
                    return None
                assert p.error_code == 0, f"node {node} {topic}-{index}: fetch error {p.error_code}"
                batches, _ = split_batches(p.records)
                if not batches:
                    return out
                for b in batches:
                    out += b
                    h = batch_header(b)
                    offset = h["base_offset"] + h["last_offset_delta"] + 1

    def wait_for(self, predicate, what: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        md = None
        while time.monotonic() < deadline:
            try:
                md = self.metadata()
                if predicate(md):
                    return md
            except (OSError, KeyError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; last metadata {md}")

    def wait_replicas_identical(self, topic: str, index: int = 0, timeout: float = 15.0) -> bytes:
        """Every broker's copy of the partition, byte for byte alike (a follower's high watermark
        comes with its next fetch); returns it."""
        def alike() -> tuple[bytes] | None:  # a tuple: an empty log alike everywhere is an answer too
            logs = {node: self.replica_bytes(node, topic, index) for node in self.brokers}
            return (next(iter(logs.values())),) if len(set(logs.values())) == 1 else None
        (log,) = wait_until(alike, f"{topic}-{index} alike on every broker", timeout=timeout, interval=0.3)
        return log

    def leader(self, topic: str, index: int = 0) -> int:
        return self.metadata()["topics"][topic][index]["leader"]

    def cleanup(self) -> None:
        for proc in self.brokers.values():
            proc.cleanup()
        self.etcd.cleanup()


@contextmanager
def running_cluster(storage_mode: str | tuple[str, ...] = "segment", **options) -> Iterator[Cluster]:
    """Every cluster fixture's body: `with running_cluster(mode, **options) as cluster: yield cluster`.
    The brokers (Cluster's `options`) are started, and stopped with their etcd on leaving, also
    when one of them fails to start."""
    cluster = Cluster(storage_mode, **options)
    try:
        yield cluster.start()
    finally:
        cluster.cleanup()


def create_on(cluster: Cluster, topic: str, replicas: list[int]) -> None:
    with Client(cluster.brokers[replicas[0]].host, cluster.brokers[replicas[0]].port) as c:
        (t,) = c.request(19, 5, topics=[{"name": topic, "num_partitions": -1, "replication_factor": -1,
                                         "assignments": [{"partition_index": 0, "broker_ids": replicas}],
                                         "configs": []}], validate_only=False, timeout=10_000).topics
    assert t.error_code == 0, t
    cluster.wait_for(lambda md: md["topics"].get(topic, {}).get(0, {}).get("leader") == replicas[0]
                     and sorted(md["topics"][topic][0]["isr"]) == sorted(replicas), f"{topic} led by {replicas[0]}")
    cluster.wait_led_here(topic, 0, replicas[0])
