"""The compat cluster (etcd + brokers) with every process in its own network namespace.

    net = Network()                                  # compat_tests/helpers/netns.py
    cluster = NetnsCluster(net, "segment").start()   # etcd on host "etcd", broker n on "b<n>"
    net.cut(cluster.hosts[1], [cluster.hosts[2], cluster.hosts[3]], "reject")
    ...
    net.heal(); cluster.cleanup(); net.close()

Everything compat_tests/helpers/cluster.py's Cluster offers (metadata, wait_for, create_topic,
replica_bytes, leader) works unchanged: the test's clients, in the root namespace, reach each
host's address through the network's root veth. Brokers take the same flags as there
(broker/testing/process_cluster.py's member_flags, the short test timeouts) and listen on
port 9092 of their own address; etcd on its host's address. `ip netns exec` execs the
process, so killing a BrokerProcess or EtcdProcess kills the process itself.
"""

from __future__ import annotations

from broker.testing.etcd_process import EtcdProcess
from broker.testing.process_cluster import member_flags
from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.cluster import Cluster
from compat_tests.helpers.netns import Host, Network

BROKER_PORT = 9092


class NetnsEtcd(EtcdProcess):
    def __init__(self, host: Host) -> None:
        super().__init__()
        self.host = host.ip
        self.net_host = host

    def command(self) -> list[str]:
        return self.net_host.argv(super().command())


class NetnsBroker(BrokerProcess):
    def __init__(self, host: Host, **kwargs) -> None:
        super().__init__(port=BROKER_PORT, **kwargs)
        self.host = host.ip  # `--host`: where it listens and what it advertises
        self.net_host = host
        self.environment: dict[str, str] = {}  # set before a start: the clock-skew nemesis's libfaketime

    def command(self) -> list[str]:
        env = ["env", *(f"{k}={v}" for k, v in self.environment.items())] if self.environment else []
        return self.net_host.argv([*env, *super().command()])


class NetnsCluster(Cluster):
    def __init__(self, network: Network, storage_mode: str, size: int = 3, extra_args: tuple[str, ...] = ()) -> None:
        """`extra_args`: flags for every broker, after member_flags (a later flag wins)."""
        self.network = network
        self.storage_mode = storage_mode
        self.etcd = NetnsEtcd(network.add_host("etcd"))
        self.hosts = {node: network.add_host(f"b{node}") for node in range(1, size + 1)}
        self.brokers = {node: NetnsBroker(host, storage_mode=storage_mode,
                                          extra_args=[*member_flags(node, ""), *extra_args])
                        for node, host in self.hosts.items()}

    @property
    def etcd_host(self) -> Host:
        return self.etcd.net_host
