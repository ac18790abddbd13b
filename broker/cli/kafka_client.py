"""A small synchronous Kafka client for the `twinlog` CLI: one blocking socket per broker.

The CLI's commands talk to a broker the way Kafka's own tools do, over the Kafka protocol,
so they work against twinlog and Kafka alike. They send a handful of requests each and wait
for every answer, so a blocking socket per broker is all it takes (the broker's own outbound
connection, replica/broker_connection.py, is asyncio and reconnects forever: a follower's
needs, not a tool's).

Versions: on connecting, ApiVersions v3 says what the broker serves; each request then goes
out at the highest version both sides know, within the range whose schema the commands build
(VERSIONS). A broker that serves none of that range gets a one-line ClientError, as does a
broker that cannot be reached or answers garbage.

Security: the connection settings (client_settings.py) say whether each socket is wrapped in
TLS (the stdlib's ssl, verifying the broker's certificate and, unless
ssl.endpoint.identification.algorithm says none, its host name) and whether, after ApiVersions,
it logs in over SASL (replica/sasl_login.py, the follower's own login). Every broker of the
cluster is reached with the same settings, as a Kafka client does.

Routing: `call(..., node=None)` goes to the bootstrap broker; Metadata names each broker
(node id -> host:port), and commands send partition requests to the leader and group
requests to the coordinator (FindCoordinator) by node id.
"""

from __future__ import annotations

import itertools
import socket
import ssl
from importlib import metadata as package_metadata

from wire.client_codec import decode_response, encode_request, response_correlation_id
from wire.framing import FrameDecoder, PeerProtocolError
from wire.request_builder import build_request

API_VERSIONS = 18
# api key -> (name, lowest, highest version the commands' request descriptions fit)
VERSIONS: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 3, 9),
    1: ("Fetch", 4, 12),  # v13 names topics by id
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 4, 12),
    8: ("OffsetCommit", 2, 9),
    9: ("OffsetFetch", 8, 9),  # v8: several groups per request
    10: ("FindCoordinator", 4, 6),  # v4: coordinator_keys
    15: ("DescribeGroups", 0, 6),  # v6: GROUP_ID_NOT_FOUND for a group that does not exist
    16: ("ListGroups", 0, 4),
    19: ("CreateTopics", 5, 7),
    20: ("DeleteTopics", 4, 6),
    29: ("DescribeAcls", 1, 3),
    30: ("CreateAcls", 1, 3),
    31: ("DeleteAcls", 1, 3),
    32: ("DescribeConfigs", 1, 4),
    37: ("CreatePartitions", 0, 3),
    42: ("DeleteGroups", 0, 2),
    44: ("IncrementalAlterConfigs", 0, 1),
    48: ("DescribeClientQuotas", 0, 1),
    49: ("AlterClientQuotas", 0, 1),
    50: ("DescribeUserScramCredentials", 0, 0),
    51: ("AlterUserScramCredentials", 0, 0),
    60: ("DescribeCluster", 0, 1),
    69: ("ConsumerGroupDescribe", 0, 1),
}
_READ_CHUNK = 256 * 1024


class ClientError(Exception):
    """The request cannot be answered: unreachable broker, unserved API, broken reply.
    Its message is one line for the operator."""


def _software_version() -> str:
    try:
        return package_metadata.version("twinlog")
    except package_metadata.PackageNotFoundError:
        return "0"


class _Connection:
    """One blocking socket to one broker, with the versions it serves."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float, security) -> None:
        self.address = f"{host}:{port}"
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise ClientError(f"cannot connect to {self.address}: {exc.strerror or exc}") from None
        if security is not None and security.tls:
            try:
                sock = _tls_context(security).wrap_socket(sock, server_hostname=host)
            except ssl.SSLError as exc:  # an untrusted certificate, a name it does not hold, ...
                sock.close()
                raise ClientError(f"TLS with {self.address} failed: {exc}") from None
            except OSError as exc:
                sock.close()
                raise ClientError(f"TLS with {self.address} failed: {exc.strerror or exc}") from None
        self._sock = sock
        self._client_id = client_id
        self._frames = FrameDecoder()
        self._pending: list[bytes] = []
        self._correlation_ids = itertools.count(1)
        try:
            answer = self.request(build_request(API_VERSIONS, 3, client_software_name="twinlog-cli",
                                                client_software_version=_software_version()))
        except ClientError as exc:  # a listener closes a connection it cannot serve without a word
            hint = ("is it a plaintext listener, or one that requires a client certificate (--cert)?"
                    if security is not None and security.tls else "is it a TLS listener? see --security-protocol")
            self.close()
            raise ClientError(f"{exc} ({hint})") from None
        if answer.error_code.value != 0:
            self.close()
            raise ClientError(f"{self.address} refused ApiVersions v3: {answer.error_code.name}")
        self.served = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        if security is not None and security.sasl:
            from replica.sasl_login import SaslLoginFailed, login_blocking

            try:
                login_blocking(self.request, security)
            except SaslLoginFailed as exc:
                self.close()
                raise ClientError(f"{self.address}: {exc}") from None

    def version_for(self, api_key: int) -> int:
        name, lowest, highest = VERSIONS[api_key]
        low, high = self.served.get(api_key, (0, -1))
        version = min(highest, high)
        if version < max(lowest, low):
            served = f"v{low}-{high}" if high >= 0 else "no version"
            raise ClientError(f"{self.address} serves {name} {served}; this tool needs v{lowest}-{highest}")
        return version

    def request(self, body):
        correlation_id = next(self._correlation_ids)
        try:
            self._sock.sendall(encode_request(body, correlation_id, self._client_id))
            frame = self._next_frame()
            if response_correlation_id(frame) != correlation_id:
                raise ClientError(f"{self.address} answered out of order")
            return decode_response(frame, body.__api_key__, body.__version__)
        except TimeoutError:
            raise ClientError(f"{self.address} did not answer {type(body).__name__} in time") from None
        except OSError as exc:
            raise ClientError(f"connection to {self.address} failed: {exc.strerror or exc}") from None
        except PeerProtocolError as exc:
            raise ClientError(f"{self.address} sent a reply that does not parse: {exc}") from None

    def _next_frame(self) -> bytes:
        while not self._pending:
            data = self._sock.recv(_READ_CHUNK)
            if not data:
                raise ClientError(f"{self.address} closed the connection")
            self._pending.extend(self._frames.feed(data))
        return self._pending.pop(0)

    def close(self) -> None:
        self._sock.close()


def _tls_context(security) -> ssl.SSLContext:
    """Trust `ca` (else the system's CAs), present `cert` when given; the chain is always
    verified, the host name unless ssl.endpoint.identification.algorithm is none (Kafka's rule)."""
    try:
        context = ssl.create_default_context(cafile=security.ca)
        context.check_hostname = security.check_hostname
        if security.cert:
            context.load_cert_chain(security.cert, security.tls_key)
    except (ssl.SSLError, OSError) as exc:
        raise ClientError(f"cannot load the TLS files: {exc}") from None
    return context


class KafkaClient:
    """Requests to a cluster reached through `bootstrap` ("host:port[,host:port...]"), each
    connection secured as `security` (client_settings.ClientSettings) says; None: PLAINTEXT."""

    def __init__(self, bootstrap: str, client_id: str = "twinlog-cli", timeout_s: float = 30.0,
                 security=None) -> None:
        self._connect = (client_id, timeout_s, security)
        self._bootstrap = [_split_address(a) for a in bootstrap.split(",") if a.strip()]
        if not self._bootstrap:
            raise ClientError("no bootstrap server given")
        self._nodes: dict[int, tuple[str, int]] = {}
        self._connections: dict[int | None, _Connection] = {}

    def __enter__(self) -> "KafkaClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def call(self, api_key: int, node: int | None = None, **values):
        """Send the request described by `values` (see wire/request_builder.py) to broker `node`
        (None: the bootstrap broker) at the version both sides serve; return the response."""
        conn = self._connection(node)
        return conn.request(build_request(api_key, conn.version_for(api_key), **values))

    def version_for(self, api_key: int, node: int | None = None) -> int:
        return self._connection(node).version_for(api_key)

    def metadata(self, topics: list[str] | None = None, node: int | None = None, auto_create: bool = False):
        """A Metadata answer (all topics for None); remembers where each broker listens.
        `auto_create` lets the broker create missing topics if its auto.create.topics.enable does."""
        answer = self.call(3, node, topics=None if topics is None else [{"name": t, "topic_id": None} for t in topics],
                           allow_auto_topic_creation=auto_create, include_cluster_authorized_operations=False,
                           include_topic_authorized_operations=False)
        self._nodes.update({b.node_id: (b.host, b.port) for b in answer.brokers})
        return answer

    def coordinator(self, group: str) -> int:
        """Node id of the coordinator of consumer group `group`."""
        answer = self.call(10, key_type=0, coordinator_keys=[group])
        (c,) = answer.coordinators
        if c.error_code.value != 0:
            raise ClientError(f"no coordinator for group {group!r}: {c.error_code.name}")
        self._nodes[c.node_id] = (c.host, c.port)
        return c.node_id

    def _connection(self, node: int | None) -> _Connection:
        conn = self._connections.get(node)
        if conn is not None:
            return conn
        if node is None:
            failures = []
            for host, port in self._bootstrap:
                try:
                    conn = _Connection(host, port, *self._connect)
                    break
                except ClientError as exc:
                    failures.append(str(exc))
            else:
                raise ClientError("; ".join(failures))
        else:
            if node not in self._nodes:
                self.metadata([])
            if node not in self._nodes:
                raise ClientError(f"broker {node} is not in the cluster's metadata")
            conn = _Connection(*self._nodes[node], *self._connect)
        self._connections[node] = conn
        return conn


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ClientError(f"bootstrap server {address!r} is not host:port")
    return host.strip("[]"), int(port)


EARLIEST, LATEST = -2, -1  # ListOffsets' special timestamps


def partition_leaders(metadata, topics: list[str] | None = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> leader node id from a Metadata answer; a topic the answer reports
    an error for (it does not exist) is a ClientError naming it."""
    out = {}
    for t in metadata.topics:
        if topics is not None and t.name not in topics:
            continue
        if t.error_code.value != 0:
            raise ClientError(f"topic {t.name!r}: {t.error_code.name.upper()}")
        out.update({(t.name, p.partition_index): p.leader_id for p in t.partitions})
    return out


def list_offsets(client: KafkaClient, leaders: dict[tuple[str, int], int],
                 timestamps: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The offset each partition's leader gives for its timestamp (EARLIEST, LATEST, or ms:
    the first offset at or after it, -1 past the end). One request per leader."""
    by_leader: dict[int, dict[str, list]] = {}
    for (topic, partition), timestamp in timestamps.items():
        by_leader.setdefault(leaders[(topic, partition)], {}).setdefault(topic, []).append(
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp})
    out = {}
    for node, topics in by_leader.items():
        answer = client.call(2, node, replica_id=-1, isolation_level=0,
                             topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])
        for t in answer.topics:
            for p in t.partitions:
                if p.error_code.value != 0:
                    raise ClientError(f"ListOffsets {t.name}/{p.partition_index}: {p.error_code.name.upper()}")
                out[(t.name, p.partition_index)] = p.offset
    return out
