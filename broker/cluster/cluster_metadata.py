"""One broker's membership of an etcd-coordinated cluster: the single object the broker holds.

`ClusterMetadata` puts together the broker's session (registration under a lease), the watch
that keeps its MetadataImage current, the controller (active only on the broker that won the
controller key) and the write paths: topic admin, the leader's AlterPartition, leader
elections on request, producer-id blocks. Everything a broker decides from cluster state, it
reads from `image`; everything it changes goes through etcd transactions, so two brokers can
never both believe a write of theirs won.

    cluster = ClusterMetadata("http://127.0.0.1:2379", node_id=1, host="127.0.0.1", port=9092)
    cluster.add_listener(replica_manager.on_metadata)   # async (image, change)
    cluster.add_session_listener(on_session)             # (alive: bool), e.g. refuse acks=all
    await cluster.start()
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlsplit

import aetcd

from broker.cluster.cluster_events import ClusterEvents
from broker.cluster.leader_election import alter_partition, preferred, unclean
from broker.cluster.reassignment import cancel as cancel_move, complete_if_ready, start as start_move
from broker.cluster.broker_session import DEFAULT_SESSION_TIMEOUT_MS, BrokerSession
from broker.cluster.controller import Controller
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import (DEFAULT_PREFIX, AclList, BrokerConfigs, BrokerRegistration, ClientQuotaList,
                                        DelegationTokenRecord, Endpoint, EtcdLayout, FinalizedFeatures, GroupConfigs,
                                        PartitionState, ScramUser, TopicRecord)
from broker.cluster.etcd_store import EtcdStore
from broker.cluster.fencing import Fencing
from broker.cluster.metadata_image import MetadataImage
from broker.cluster.metadata_watch import Listener, MetadataWatch
from broker.cluster.topic_admin import TopicAdmin
from broker.producer_ids import NoProducerIdBlock

log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock size
# gRPC pings a connection idle this long, and drops it when the ping is not answered within an
# RPC timeout: a connection whose packets a network partition dropped is otherwise kept, and
# resumes only at the kernel's next retransmission, which backs off to many seconds. etcd
# refuses pings more often than every 5 s (--grpc-keepalive-min-time) and closes the channel.
KEEPALIVE_PING_MS = 6000
# The longest wait between two attempts to reconnect: gRPC's default grows to 120 s, and once it
# had grown during a partition, brokers came back 12-13 s after the network did.
MAX_RECONNECT_BACKOFF_MS = 1000


def channel_options(rpc_timeout: float) -> dict[str, int]:
    """The gRPC channel's settings: notice a dead connection, and reconnect soon once the
    network is back. A connect attempt gives up after an RPC timeout (gRPC's default: 20 s, so
    a SYN lost in a partition held the next attempt back long after the heal)."""
    timeout_ms = int(rpc_timeout * 1000)
    return {"grpc.keepalive_time_ms": KEEPALIVE_PING_MS, "grpc.keepalive_timeout_ms": timeout_ms,
            "grpc.http2.max_pings_without_data": 0,
            "grpc.initial_reconnect_backoff_ms": 100, "grpc.min_reconnect_backoff_ms": timeout_ms,
            "grpc.max_reconnect_backoff_ms": MAX_RECONNECT_BACKOFF_MS}


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """"http://host:port" or "host:port" (the first of a comma-separated list: aetcd talks to
    one member; with a multi-member etcd, list the local one first)."""
    first = endpoint.split(",")[0].strip()
    parts = urlsplit(first if "://" in first else f"http://{first}")
    return parts.hostname or "127.0.0.1", parts.port or 2379


class ClusterMetadata:
    def __init__(self, etcd_endpoint: str, node_id: int, host: str, port: int, *,
                 prefix: str = DEFAULT_PREFIX, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 unclean_leader_election: bool = False, endpoints: Sequence[Endpoint] = ()) -> None:
        etcd_host, etcd_port = parse_endpoint(etcd_endpoint)
        self.node_id = node_id
        # An RPC that takes longer than a keep-alive interval is as good as failed: give up on it
        # in time to send the next keep-alive.
        rpc_timeout = max(1.0, session_timeout_ms / 3000)
        self._client = aetcd.Client(etcd_host, etcd_port, timeout=rpc_timeout, options=channel_options(rpc_timeout))
        self._store = EtcdStore(self._client, EtcdLayout(prefix))
        self.session = BrokerSession(self._store, node_id, host, port, session_timeout_ms, tuple(endpoints))
        self._watch = MetadataWatch(self._store)
        self.events = ClusterEvents()  # ISR changes and elections, for /metrics (cluster_events.py)
        self.controller = Controller(self._store, self.session, self.events, unclean_leader_election)
        self._watch.add_listener(self.controller.on_metadata)
        self._fencing = Fencing(self._store, self.session, self.controller.guard)
        self._watch.add_listener(self._fencing.on_metadata)
        self._admin = TopicAdmin(self._store, lambda: self._watch.image)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Register, then load the metadata; returns once the first image is published."""
        await self.session.open()
        await self._watch.start()

    async def controlled_shutdown(self, timeout: float) -> bool:
        """Kafka's controlled shutdown: announce it (the controller then elects other leaders
        for what we lead and drops us from every ISR, leader_election.on_broker_change) and
        wait until the image shows we lead nothing; False if that took longer than `timeout`
        or our session is gone. We keep serving meanwhile: requests for what moved get
        NOT_LEADER_OR_FOLLOWER and clients go to the new leaders."""
        try:
            if not await self.session.announce_shutdown():
                return False
            await self._watch.wait_for(
                lambda im: all(s.leader != self.node_id for s in im.partitions.values()), timeout)
            return True
        except (asyncio.TimeoutError, ClusterError, aetcd.exceptions.ClientError) as exc:
            log.warning("broker %d: controlled shutdown did not complete: %r", self.node_id, exc)
            return False

    async def suspect(self, registration: BrokerRegistration, suspected: bool) -> None:
        """Record (or withdraw) this broker's suspicion that another one is dead (its port
        refuses, peer_liveness.py); a majority's suspicion fences it (fencing.py). Raises
        aetcd's errors when etcd is out of reach."""
        await self._fencing.vote(registration, suspected)

    async def close(self, revoke: bool = True) -> None:
        """`revoke=False` leaves the lease to expire as if this broker had crashed."""
        await self._watch.close()
        await self.session.close(revoke=revoke)
        await self._client.close()

    # --------------------------------------------------------------- what we know
    @property
    def image(self) -> MetadataImage:
        return self._watch.image

    def has_session(self) -> bool:
        """False once etcd may have expired our session: the controller's duties and fencing
        votes stop. Leaderships go on (member.py says why)."""
        return self.session.has_session()

    def add_session_listener(self, listener: Callable[[bool], None]) -> None:
        self.session.add_listener(listener)

    def add_listener(self, listener: Listener) -> None:
        self._watch.add_listener(listener)

    async def wait_for(self, predicate: Callable[[MetadataImage], bool], timeout: float) -> MetadataImage:
        return await self._watch.wait_for(predicate, timeout)

    async def wait_until_shown(self, written: Sequence[PartitionState], timeout: float) -> MetadataImage:
        """Until the image holds each written partition state (or a later one, or the partition
        is gone): an admin request answers then, as Kafka's once its record is committed."""
        def shown(image: MetadataImage) -> bool:
            return all((s := image.partition(w.topic, w.index)) is None or s.partition_epoch >= w.partition_epoch
                       for w in written)
        return await self._watch.wait_for(shown, timeout)

    # --------------------------------------------------------------- topic admin
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: Mapping[str, str], storage_mode: str,
                           assignments: Sequence[Sequence[int]] | None = None) -> TopicRecord:
        return await self._admin.create_topic(name, num_partitions, replication_factor, configs, storage_mode,
                                              assignments)

    async def delete_topic(self, name: str) -> TopicRecord:
        return await self._admin.delete_topic(name)

    async def add_partitions(self, name: str, total: int,
                             assignments: Sequence[Sequence[int]] | None = None) -> TopicRecord:
        return await self._admin.add_partitions(name, total, assignments)

    async def alter_topic_configs(self, name: str,
                                  decide: Callable[[dict[str, str], str], dict[str, str]]) -> TopicRecord:
        """IncrementalAlterConfigs / AlterConfigs of a topic: compare-and-swap of its record
        (TopicAdmin.alter_configs); ClusterError UNKNOWN_TOPIC_OR_PARTITION, or what `decide` raises."""
        return await self._admin.alter_configs(name, decide)

    # ---------------------------------------------------------- partition states
    async def alter_partition(self, topic: str, index: int, leader_epoch: int, partition_epoch: int,
                              new_isr: Sequence[int]) -> PartitionState:
        """Kafka's AlterPartition, sent by this broker as the partition's leader: the new state
        (partition_epoch bumped), or ClusterError with FENCED_LEADER_EPOCH,
        INVALID_UPDATE_VERSION, NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST, INELIGIBLE_REPLICA,
        STALE_BROKER_EPOCH (our session is gone) or UNKNOWN_TOPIC_OR_PARTITION. The ISR change
        that brings a reassignment's last new replica in also completes the reassignment."""
        alive = self.image.live_broker_ids()
        return await self._store.update_partition(
            topic, index,
            lambda s: complete_if_ready(
                alter_partition(s, self.node_id, leader_epoch, partition_epoch, new_isr, alive),
                alive),
            [self.session.registration_guard()])

    async def elect_preferred(self, topic: str, index: int) -> PartitionState:
        """ElectLeaders(PREFERRED); ClusterError ELECTION_NOT_NEEDED or
        PREFERRED_LEADER_NOT_AVAILABLE when it cannot or need not happen."""
        alive = self.image.live_broker_ids()
        return await self.events.electing(lambda rule: self._store.update_partition(topic, index, rule),
                                          lambda s: preferred(s, alive))

    async def elect_unclean(self, topic: str, index: int) -> PartitionState:
        """ElectLeaders(UNCLEAN) for an offline partition; ClusterError ELECTION_NOT_NEEDED or
        ELIGIBLE_LEADERS_NOT_AVAILABLE."""
        alive = self.image.live_broker_ids()
        return await self.events.electing(lambda rule: self._store.update_partition(topic, index, rule),
                                          lambda s: unclean(s, alive))

    async def reassign(self, topic: str, index: int, target: Sequence[int],
                       allow_replication_factor_change: bool = True) -> PartitionState | None:
        """AlterPartitionReassignments for one partition (reassignment.start): the state
        written, None if it was already so; ClusterError INVALID_REPLICA_ASSIGNMENT,
        INVALID_REPLICATION_FACTOR or UNKNOWN_TOPIC_OR_PARTITION."""
        alive = self.image.live_broker_ids()
        return await self._store.update_partition(
            topic, index, lambda s: start_move(s, target, alive, allow_replication_factor_change))

    async def cancel_reassignment(self, topic: str, index: int) -> PartitionState:
        """AlterPartitionReassignments with null replicas (reassignment.cancel); ClusterError
        NO_REASSIGNMENT_IN_PROGRESS, INVALID_REPLICA_ASSIGNMENT or UNKNOWN_TOPIC_OR_PARTITION."""
        alive = self.image.live_broker_ids()
        unclean_allowed = self.controller.unclean_allowed(self.image, topic)
        return await self._store.update_partition(topic, index, lambda s: cancel_move(s, alive, unclean_allowed))

    async def _swap_shown(self, revision: int) -> None:
        """Until this broker's image is at `revision` (a compare-and-swap's): it shows that
        write, or a later change of the same key. Waiting for an image equal to what was written
        waited 10 s for nothing when another broker's change landed in the same published image."""
        await self._watch.wait_for(lambda image: image.revision >= revision, 10.0)

    async def update_scram_user(self, user: str, decide: Callable[[dict], dict]) -> ScramUser | None:
        """AlterUserScramCredentials for one user, by compare-and-swap (EtcdStore.update_scram_user);
        returns once this broker's image shows the result, so a login here right after succeeds."""
        written = await self._store.update_scram_user(user, decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def update_acls(self, decide: Callable[[tuple[dict, ...]], tuple[dict, ...]]) -> AclList:
        """CreateAcls / DeleteAcls: the ACL list by compare-and-swap (EtcdStore.update_acls);
        returns once this broker's image shows the result, so its next check uses it."""
        written = await self._store.update_acls(decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def update_delegation_token(self, token_id: str, decide: Callable[[dict | None], dict | None]
                                      ) -> DelegationTokenRecord | None:
        """Create, renew, expire or sweep one delegation token by compare-and-swap
        (EtcdStore.update_delegation_token); returns once this broker's image shows the result,
        so a login or a describe here right after sees it."""
        written = await self._store.update_delegation_token(token_id, decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def update_client_quotas(self, decide: Callable[[tuple[dict, ...]], tuple[dict, ...]]) -> ClientQuotaList:
        """AlterClientQuotas: every quota by compare-and-swap (EtcdStore.update_client_quotas);
        returns once this broker's image shows the result, so its next request is held to it."""
        written = await self._store.update_client_quotas(decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def update_group_configs(self, group: str, decide: Callable[[dict], dict]) -> GroupConfigs | None:
        """IncrementalAlterConfigs of a group, by compare-and-swap (EtcdStore.update_group_configs);
        returns once this broker's image shows the result, so its next fetch uses it."""
        written = await self._store.update_group_configs(group, decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def update_features(self, decide: Callable[[FinalizedFeatures | None], FinalizedFeatures]) -> FinalizedFeatures:
        """UpdateFeatures, by compare-and-swap (EtcdStore.update_features); returns once this
        broker's image shows the result, so its next ApiVersions answer has it."""
        written = await self._store.update_features(decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def update_broker_configs(self, name: str, decide: Callable[[dict], dict]) -> BrokerConfigs | None:
        """AlterConfigs of a BROKER resource, by compare-and-swap (EtcdStore.update_broker_configs);
        returns once this broker's image shows the result, so its next DescribeConfigs shows it."""
        written = await self._store.update_broker_configs(name, decide)
        await self._swap_shown(self._store.last_swap_revision)
        return written

    async def cluster_id(self, proposal: str) -> str:
        """Kafka's cluster.id, the same on every broker: the first broker's proposal (its own
        meta.properties id), kept in etcd under <prefix>cluster_id. Clients (librdkafka) warn
        when brokers of one bootstrap list report different ids."""
        key = self._store.layout.prefix + b"cluster_id"
        tx = self._client.transactions
        await self._store.transaction(compare=[tx.version(key) == 0],
                                      success=[tx.put(key, json.dumps({"cluster_id": proposal}).encode())])
        stored = await self._client.get(key)
        return json.loads(stored.value)["cluster_id"]

    async def allocate_producer_id_block(self, size: int = PRODUCER_ID_BLOCK_SIZE) -> int:
        """The first id of a block of `size` ids no other broker will ever be given;
        NoProducerIdBlock when etcd cannot hand one out now."""
        try:
            return await self._store.allocate_producer_ids(size)
        except (aetcd.exceptions.ClientError, ClusterError) as exc:
            raise NoProducerIdBlock(f"No producer id block from etcd: {exc!r}") from exc
