"""A three-broker twinlog cluster for `make spark-demo-cluster` and the Spark cluster test.

etcd and the brokers are started as real processes by compat_tests.cluster.Cluster (the cluster
fixture of the compat tests); this wraps it as failover_run.Brokers: the bootstrap list of all
brokers (Spark's options keep it for the whole query, dead brokers included, as a user's would),
who leads a partition, SIGKILL and restart. Topics get replication factor 3 and
min.insync.replicas=2, so acks=all goes on with one broker down.
"""

from __future__ import annotations

from compat_tests.cluster import Cluster


class ClusterBrokers:
    def __init__(self, storage_mode: str = "segment", session_ms: int | None = None):
        # A later flag wins, so session_ms replaces the fixture's short test session.
        extra = ("--broker-session-timeout-ms", str(session_ms)) if session_ms else ()
        self.cluster = Cluster(storage_mode, extra_args=("--min-insync-replicas", "2", *extra))

    def __enter__(self) -> "ClusterBrokers":
        self.cluster.start()
        self._bootstrap = ",".join(p.bootstrap for p in self.cluster.brokers.values())
        return self

    def __exit__(self, *exc) -> None:
        self.cluster.cleanup()

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    def create_topics(self, partitions: dict[str, int]) -> None:
        for name, n in partitions.items():
            self.cluster.create_topic(name, n, replication_factor=3, configs={"min.insync.replicas": "2"})

    def leader(self, topic: str, partition: int) -> int:
        return self.cluster.wait_for(lambda md: md["topics"][topic][partition]["leader"] > 0,
                                     f"a leader of {topic}-{partition}")["topics"][topic][partition]["leader"]

    def kill(self, node: int) -> None:
        self.cluster.brokers[node].kill()

    def restart(self, node: int) -> None:
        self.cluster.brokers[node].start()
