"""A three-broker twinlog cluster for `make spark-demo-cluster` and the Spark cluster test.

broker.testing's TwinlogProcessCluster starts etcd and the brokers as real processes; this is it as
failover_run.Brokers: the bootstrap list of all brokers (Spark's options keep it for the whole
query, dead brokers included, as a user's would), who leads a partition, SIGKILL and restart.
Topics get replication factor 3 and min.insync.replicas=2, so acks=all goes on with one broker
down.
"""

from __future__ import annotations

from broker.testing.process_cluster import TwinlogProcessCluster


class ClusterBrokers(TwinlogProcessCluster):
    def __init__(self, storage_mode: str = "segment", session_ms: int | None = None, keep: bool = False):
        # A later flag wins, so session_ms replaces the test cluster's short session.
        extra = ("--broker-session-timeout-ms", str(session_ms)) if session_ms else ()
        super().__init__(storage_mode, extra_args=("--min-insync-replicas", "2", *extra), keep=keep)

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_servers

    def create_topics(self, partitions: dict[str, int]) -> None:
        for name, n in partitions.items():
            self.create_topic(name, n, replication_factor=3, configs={"min.insync.replicas": "2"})
