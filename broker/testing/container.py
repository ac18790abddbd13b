"""twinlog in containers for tests, in the style of testcontainers' KafkaContainer (needs the
`testcontainers` package and a Docker engine; the image is the repo's Dockerfile, `make image`):

    from broker.testing.container import TwinlogCluster, TwinlogContainer

    with TwinlogContainer("twinlog", storage_mode="commitlog") as broker:
        broker.create_topic("orders", partitions=3)
        producer = Producer({"bootstrap.servers": broker.get_bootstrap_server()})

    with TwinlogCluster("twinlog", etcd_image="twinlog-etcd") as cluster:   # etcd + 3 brokers
        cluster.create_topic("orders", partitions=3)
        cluster.broker(cluster.leader_id("orders", 0)).kill()

pytest users get one broker as the `twinlog_container` fixture (broker/testing/pytest_plugin.py).

Each broker has two listeners, as Kafka in a container needs. EXTERNAL is for clients on the
Docker host: the container's port 9093 is published on a free host port P, and Metadata
advertises HOST:P, so what a client outside is told to connect to is where it can. INTERNAL,
port 9092, is for containers on the same Docker network, advertised under the container's alias;
brokers replicate over it. P is picked before the container starts (the advertised address is
start-up configuration), so another process may take it in between: rare, and start fails.

A container counts as started once the broker answers ApiVersions on P; one that exits during
start-up raises ContainerStartError with its log's tail.
"""

from __future__ import annotations

import socket
import time
import uuid

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from broker.cli.kafka_client import ClientError, KafkaClient
from broker.testing.twinlog_broker import ask_api_versions, create_topic

INTERNAL_PORT = 9092
EXTERNAL_PORT = 9093
DATA_VOLUME_PATH = "/var/lib/twinlog"  # the Dockerfile's VOLUME; the data dir is data/ in it
ETCD_ALIAS = "etcd"
ETCD_READY = "ready to serve client requests"


class ContainerStartError(RuntimeError):
    """The broker's container exited or did not answer in time; the message ends with its log."""


class TwinlogContainer(DockerContainer):
    """One twinlog broker in a container. `env` adds TWINLOG_* settings (broker/settings/table.py);
    `volume` names a Docker volume to hold the data (kept after stop, so a later container can
    open it); `network` and `alias` put it on a Docker network under that name."""

    def __init__(self, image: str = "twinlog", storage_mode: str = "segment", *, env: dict[str, str] | None = None,
                 volume: str | None = None, network: Network | None = None, alias: str | None = None,
                 host_port: int | None = None, start_timeout: float = 60.0, **kwargs) -> None:
        super().__init__(image, network=network, network_aliases=[alias] if alias else None, **kwargs)
        self.storage_mode = storage_mode
        self.start_timeout = start_timeout
        self.host = self.get_docker_client().host()
        self.host_port = host_port or _free_port()
        internal = alias or "localhost"
        self.with_envs(
            TWINLOG_STORAGE_MODE=storage_mode,
            TWINLOG_LISTENERS=f"INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{EXTERNAL_PORT}",
            TWINLOG_ADVERTISED_LISTENERS=f"INTERNAL://{internal}:{INTERNAL_PORT},EXTERNAL://{self.host}:{self.host_port}",
            TWINLOG_LISTENER_SECURITY_PROTOCOL_MAP="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            TWINLOG_INTER_BROKER_LISTENER_NAME="INTERNAL",
            **(env or {}))
        self.with_bind_ports(EXTERNAL_PORT, self.host_port)
        if volume is not None:
            self.with_volume_mapping(volume, DATA_VOLUME_PATH, "rw")  # a name, not a path: a Docker volume

    def get_bootstrap_server(self) -> str:
        return f"{self.host}:{self.host_port}"

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        """CreateTopics, then wait until Metadata shows a leader for every partition."""
        create_topic(self.get_bootstrap_server(), name, partitions, configs)

    def start(self) -> "TwinlogContainer":
        super().start()
        self.wait_until_serving()
        return self

    def wait_until_serving(self) -> None:
        """Return once the broker answers ApiVersions on its EXTERNAL address."""
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self.get_wrapped_container().reload()
            if self.get_wrapped_container().status == "exited":
                raise ContainerStartError(f"the twinlog container exited during start-up "
                                          f"(code {self.exit_code()})\n{self.log_tail()}")
            try:
                ask_api_versions(self.host, self.host_port)
                return
            except (OSError, ClientError, ValueError) as exc:  # the port's proxy answers before the broker
                last_error = exc
            time.sleep(0.1)
        raise ContainerStartError(f"twinlog did not answer ApiVersions on {self.get_bootstrap_server()} within "
                                  f"{self.start_timeout:g} s; last error: {last_error}\n{self.log_tail()}")

    def docker_stop(self, timeout: int = 30) -> int:
        """`docker stop`: SIGTERM, SIGKILL after `timeout` s; the container's exit code."""
        container = self.get_wrapped_container()
        container.stop(timeout=timeout)
        return self.exit_code()

    def kill(self) -> None:
        """`docker kill`: SIGKILL, the broker gets no chance to flush or leave the cluster."""
        self.get_wrapped_container().kill()
        self.get_wrapped_container().wait()

    def exit_code(self) -> int:
        return self.get_wrapped_container().wait(timeout=60)["StatusCode"]

    def logs(self) -> str:
        return self.get_wrapped_container().logs().decode("utf-8", "replace")

    def log_tail(self, lines: int = 60) -> str:
        text = self.logs().splitlines()
        return "\n".join([f"--- last {min(lines, len(text))} lines of the container's log ---", *text[-lines:]])


class TwinlogCluster:
    """etcd and `brokers` twinlog brokers (node ids 1..n) in containers on a Docker network of
    their own, named after the run so that clusters side by side never meet. `etcd_image` runs
    `etcd` from its PATH: Debian's etcd-server (image.build_etcd_image) or quay.io/coreos/etcd.
    Stopping removes every container, the network and the brokers' volumes, whatever failed."""

    def __init__(self, image: str = "twinlog", etcd_image: str = "quay.io/coreos/etcd:v3.5.17", brokers: int = 3,
                 storage_mode: str = "segment", env: dict[str, str] | None = None,
                 start_timeout: float = 90.0) -> None:
        self.image, self.etcd_image, self.storage_mode = image, etcd_image, storage_mode
        self.size, self.start_timeout = brokers, start_timeout
        self.env = {"TWINLOG_DEFAULT_REPLICATION_FACTOR": str(min(3, brokers)),
                    "TWINLOG_MIN_INSYNC_REPLICAS": str(min(2, brokers)), **(env or {})}
        self.name = f"twinlog-{uuid.uuid4().hex[:10]}"
        self.network = Network(docker_network_kw={"labels": {"org.twinlog.cluster": self.name}})
        self.network.name = self.name
        self.etcd: DockerContainer | None = None
        self.brokers: list[TwinlogContainer] = []

    def start(self) -> "TwinlogCluster":
        try:
            self.network.create()
            self.etcd = (DockerContainer(self.etcd_image).with_name(f"{self.name}-etcd")
                         .with_network(self.network).with_network_aliases(ETCD_ALIAS)
                         .with_command(["etcd", "--name", ETCD_ALIAS, "--data-dir", "/tmp/etcd",
                                        "--listen-client-urls", "http://0.0.0.0:2379",
                                        "--advertise-client-urls", f"http://{ETCD_ALIAS}:2379"])
                         .waiting_for(LogMessageWaitStrategy(ETCD_READY).with_startup_timeout(self.start_timeout)
                                      .with_poll_interval(0.1)))
            self.etcd.start()
            for node_id in range(1, self.size + 1):
                self.brokers.append(TwinlogContainer(
                    self.image, self.storage_mode, network=self.network, alias=f"broker-{node_id}",
                    name=f"{self.name}-broker-{node_id}", start_timeout=self.start_timeout,
                    env={"TWINLOG_BROKER_ID": str(node_id), "TWINLOG_ETCD_ENDPOINT": f"http://{ETCD_ALIAS}:2379",
                         **self.env}))
                self.brokers[-1].start()
            self.wait_for_members()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for container in [*self.brokers, self.etcd]:
            if container is not None and container._container is not None:
                try:
                    container.stop()
                except Exception:  # an engine error on one container must not leave the others behind
                    pass
        if self.network._network is not None:
            self.network.remove()

    def wait_for_members(self) -> None:
        """Return once every broker's Metadata names all the brokers: until the controller has
        seen each registration, a topic of replication factor n cannot be created."""
        expected = set(range(1, self.size + 1))
        deadline = time.monotonic() + self.start_timeout
        for broker in self.brokers:
            with KafkaClient(broker.get_bootstrap_server(), client_id="twinlog-testing",
                             timeout_s=self.start_timeout) as client:
                while {b.node_id for b in client.metadata([]).brokers} != expected:
                    if time.monotonic() > deadline:
                        raise ContainerStartError(f"the brokers did not all see each other within "
                                                  f"{self.start_timeout:g} s\n{broker.log_tail()}")
                    time.sleep(0.1)

    def get_bootstrap_server(self) -> str:
        return ",".join(b.get_bootstrap_server() for b in self.brokers)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                     replication_factor: int = -1) -> None:
        """CreateTopics (replication factor -1: the cluster's default), then wait for the leaders."""
        create_topic(self.get_bootstrap_server(), name, partitions, configs, replication_factor)

    def broker(self, node_id: int) -> TwinlogContainer:
        return self.brokers[node_id - 1]

    def leader_id(self, topic: str, partition: int, *, via: TwinlogContainer | None = None,
                  timeout: float = 30.0) -> int:
        """The node id Metadata names as the partition's leader, waiting until there is one."""
        via = via or self.brokers[0]
        deadline = time.monotonic() + timeout
        with KafkaClient(via.get_bootstrap_server(), client_id="twinlog-testing", timeout_s=timeout) as client:
            while True:
                for t in client.metadata([topic]).topics:
                    for p in t.partitions if t.name == topic else ():
                        if p.partition_index == partition and p.error_code.value == 0 and p.leader_id >= 0:
                            return p.leader_id
                if time.monotonic() > deadline:
                    raise ClientError(f"{topic}-{partition} has no leader after {timeout:g} s")
                time.sleep(0.1)

    def __enter__(self) -> "TwinlogCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
