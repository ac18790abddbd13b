"""This broker as a member of an etcd-coordinated cluster (`twinlog serve --etcd URL`).

    etcd ──watch──► ClusterMetadata.image ──► on_metadata ──► TopicRegistry.host (open/delete logs)
                                                          └─► ReplicaManager.apply (leader / follower)
    Partition (leader) ──ISR change──► isr_change.proposer ──► ClusterMetadata.alter_partition (CAS)

Every image the watch publishes is applied whole: each topic is made to match its record
(partitions whose replicas include this broker are opened, others deleted), then every hosted
partition gets the state etcd holds for it. The replica manager ignores states it already
applied, so applying the same image twice changes nothing.

Topic admin (CreateTopics, DeleteTopics, CreatePartitions, auto-creation, topic config
changes) goes to etcd; the
call returns once this broker has applied an image that shows the result (the partitions'
file work runs in the admin worker thread, after the image is published), so the client's
next Metadata request, to this broker, sees it.

A crashed peer is noticed by its refused port well before its lease runs out
(broker/cluster/peer_liveness.py), and fenced once a majority of the brokers sees it refuse
(broker/cluster/fencing.py). SIGTERM first hands leadership over (Kafka's controlled
shutdown, `controlled_shutdown`), then stops serving and revokes the lease.

Losing the etcd session (no keep-alive acknowledged within the session timeout) does not end
this broker's leaderships: as Kafka's brokers while the controller quorum is away, it keeps
leading on its last image, and only what needs etcd waits (ISR changes, the controller's
duties, fencing votes, producer id blocks). That is safe because a leader's acks=all ack needs
every ISR member to have fetched the record, and the ISR changes only by etcd's
compare-and-swap, which a broker cut from etcd cannot win. If etcd meanwhile expires our lease
and elects another leader from the ISR, the followers that reach etcd follow it at the new
epoch and stop fetching from us, so our high watermark stalls below whatever they hold: every
record we acknowledged with acks=all is on the new leader. When the session comes back (a new
lease, a new broker epoch) the watch delivers etcd's image and we apply it like any other: a
deposed leader becomes a follower and cuts the tail the new leader never had, records that no
ISR member confirmed. An acks=1 record in that tail is lost, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Callable

import aetcd  # type: ignore[import-untyped]  # no type information

from wire.error_codes import ErrorCode
from broker.cluster.cluster_error import ClusterError
from broker.cluster.cluster_metadata import ClusterMetadata
from broker.cluster.etcd_layout import Endpoint, TopicRecord
from broker.cluster.etcd_layout import PartitionState as ClusterPartitionState
from broker.cluster.metadata_image import MetadataChange, MetadataImage
from broker.cluster.peer_liveness import PeerLiveness
from broker.cluster.view import Assignments, DecideConfigs
from replica.leader_endpoint import NetworkLeaderEndpoint, TopicPartition
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.high_watermark_checkpoint import HighWatermarkCheckpoint
from replica.fetcher import Sync
from replica.replica_manager import ReplicaManager

from wire.sasl_stage import SASL_PROTOCOLS

from broker.security.cluster_scram_credentials import ClusterScramCredentials
from broker.security.cluster_token_store import ClusterTokenStore
from broker.settings.security_config import InterBrokerLogin, inter_broker_of, listeners_of
from broker.security.tls_config import TLS_PROTOCOLS, client_context
from broker.settings.config import BrokerConfig
from broker.topic_names import TopicError

if TYPE_CHECKING:
    from broker.topic import Topic
    from broker.topics import TopicRegistry

log = logging.getLogger(__name__)

ADMIN_VISIBLE_TIMEOUT_S = 10.0
# How long SIGTERM waits for the controller to move this broker's leaderships before it stops
# anyway (Kafka retries controlled shutdown 3 x 5 s; moving leaders here takes milliseconds).
CONTROLLED_SHUTDOWN_TIMEOUT_S = 5.0


class ClusterMember:
    def __init__(self, config: BrokerConfig, stored_cluster_id: str, topics: TopicRegistry,
                 apply_topic_defaults: Callable[[], None], sync: Sync, commit_writes: Callable[[], None]) -> None:
        """`stored_cluster_id`: meta.properties'. `topics`: the topics this broker hosts, opened and
        deleted as the images say. `apply_topic_defaults`: the dynamic broker configs' topic
        defaults, applied before an image's partitions open. `sync`, `commit_writes`: the write
        path's fsync (flush.messages=1: before a follower reports) and its commit of appends."""
        self._config = config
        self._topics = topics
        self._apply_topic_defaults = apply_topic_defaults
        self.node_id = config.node_id
        self.cluster_id: str = stored_cluster_id  # etcd's shared one once started
        assert config.etcd is not None  # a cluster member is made for --etcd alone (broker.py)
        self.metadata = ClusterMetadata(
            config.etcd, config.node_id, config.advertised, config.port,
            session_timeout_ms=config.broker_session_timeout_ms,
            unclean_leader_election=config.unclean_leader_election,
            endpoints=[Endpoint(l.name, l.advertised_host, l.advertised_port) for l in listeners_of(config)])
        # Followers fetch on the leader's listener of this name, logging in as this broker.
        inter_broker = inter_broker_of(config)
        self._inter_broker_name = inter_broker.name
        self._inter_broker_login = (config.security.inter_broker_login
                                    if inter_broker.security_protocol in SASL_PROTOCOLS else None)
        self._inter_broker_tls = (client_context(config.security.tls)
                                  if inter_broker.security_protocol in TLS_PROTOCOLS else None)
        self.scram = ClusterScramCredentials(self.metadata)  # the SCRAM users: etcd's, not the data dir's
        self.token_store = ClusterTokenStore(self.metadata)  # likewise the delegation tokens
        self.replicas = ReplicaManager(config.node_id, self._endpoint_for,
                                       lag_time_max_ms=config.replica_lag_time_max_ms,
                                       hw_checkpoint=HighWatermarkCheckpoint.in_dir(config.data_dir),
                                       sync=sync, commit_writes=commit_writes)
        self.metadata.add_listener(self._on_metadata)
        self.peers = PeerLiveness(config.node_id, self.metadata.suspect, self._inter_broker_name)
        self.metadata.add_listener(self.peers.on_metadata)
        self.metadata.add_session_listener(self._on_session)
        self._first_image = True
        # The last image whose topics this broker has opened and deleted (their file work
        # runs in the admin worker, so that comes after the image is published).
        self._applied = asyncio.Condition()
        self._applied_image: MetadataImage | None = None

    async def start(self) -> None:
        # The shared cluster id first: once registered, peers and clients may ask us, and a
        # broker answering with its own meta.properties id looks like a second cluster.
        self.cluster_id = await self.metadata.cluster_id(self.cluster_id)
        await self.metadata.start()  # registers, loads, and applies the first image
        await self.scram.add_missing(self._config.security.sasl_scram_users)
        self.replicas.start()

    async def controlled_shutdown(self) -> None:
        """Before the listener closes: move our leaderships to other ISR members, so clients
        switch over at once instead of after a session timeout."""
        if await self.metadata.controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT_S):
            log.info("broker %d: controlled shutdown done, leading nothing", self.node_id)

    async def close(self) -> None:
        await self.peers.close()
        await self.replicas.close()
        await self.metadata.close()

    # ----- applying metadata ------------------------------------------------------------

    async def _on_metadata(self, image: MetadataImage, change: MetadataChange) -> None:
        self._apply_topic_defaults()  # the topic defaults first: partitions opened below take them
        topics = self._topics
        for name in [n for n in topics.topics if n not in image.topics]:
            local = topics.topics[name]
            self.replicas.remove(TopicPartition(name, i) for i, p in enumerate(local.partitions) if p is not None)
            await topics.delete(name)
        for name, record in image.topics.items():
            topic, dropped = await topics.host(name, record.topic_id, dict(record.configs),
                                               _current_replicas(image, name, record))
            self.replicas.remove(TopicPartition(name, i) for i in dropped)
            for index, partition in enumerate(topic.partitions):
                state = image.partition(name, index)
                if isinstance(partition, Partition) and state is not None:  # None: not hosted here
                    if not partition.isr_maintenance.proposing:
                        partition.isr_maintenance.propose_through(self._propose_isr)
                    self.replicas.apply(partition, _replica_state(state))
        if self._first_image:
            self._first_image = False
            await topics.remove_orphans()
        async with self._applied:
            self._applied_image = image
            self._applied.notify_all()

    def _on_session(self, alive: bool) -> None:
        if alive:
            log.info("etcd session (re)established for broker %d", self.node_id)
        else:
            log.warning("broker %d lost its etcd session: leading on its last metadata, ISR changes wait for etcd",
                        self.node_id)

    def _endpoint_for(self, leader: int) -> NetworkLeaderEndpoint | None:
        """The leader's inter-broker listener (Kafka: the same listener name on every broker);
        a registration without endpoints names only that listener's address."""
        registration = self.metadata.image.brokers.get(leader)
        if registration is None:
            return None
        address = registration.endpoint(self._inter_broker_name) or registration
        return NetworkLeaderEndpoint(address.host, address.port, self.node_id, login=self._inter_broker_login,
                                     tls=self._inter_broker_tls,
                                     partition_max_bytes=self._config.replica_fetch_max_bytes)

    def peer_address(self, node_id: int) -> tuple[str, int, InterBrokerLogin | None, ssl.SSLContext | None] | None:
        """(host, port, SASL login, TLS context) of a broker's inter-broker listener, as the
        fetchers connect to it; None for a broker not registered."""
        registration = self.metadata.image.brokers.get(node_id)
        if registration is None:
            return None
        address = registration.endpoint(self._inter_broker_name) or registration
        return address.host, address.port, self._inter_broker_login, self._inter_broker_tls

    async def _propose_isr(self, partition: object, new_isr: list[int]) -> PartitionState | None:
        # replica's IsrProposer names the partition `object` (typing it there is an import cycle)
        assert isinstance(partition, Partition)
        current = partition.state
        isr = partition.isr  # the leader's, which the proposal changes
        try:
            state = await self.metadata.alter_partition(partition.topic, partition.index, current.leader_epoch,
                                                        current.partition_epoch, new_isr)
        except ClusterError as exc:
            log.info("%s-%d: ISR change to %s refused: %s", partition.topic, partition.index, new_isr, exc)
            return None
        except aetcd.exceptions.ClientError as exc:  # etcd out of reach: the leader proposes again later
            log.warning("%s-%d: ISR change to %s not made: etcd: %r", partition.topic, partition.index, new_isr, exc)
            return None
        log.info("%s-%d: ISR %s -> %s (partition epoch %d)", partition.topic, partition.index,
                 list(current.isr), list(state.isr), state.partition_epoch)
        self.metadata.events.isr_changed(isr, state.isr)
        return _replica_state(state)

    # ----- topic admin through etcd ---------------------------------------------------------

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignments: Assignments | None = None) -> Topic | None:
        mode = configs.get("storage.mode", self._config.storage_mode)
        if replication_factor == -1:
            replication_factor = self._config.default_replication_factor
        try:
            record = await self.metadata.create_topic(name, num_partitions, replication_factor, configs, mode,
                                                      assignments)
        except ClusterError as exc:
            raise TopicError(exc.code, str(exc)) from None
        await self._visible(lambda image: image.topics.get(name) == record)
        return self._topics.get(name)

    async def delete_topic(self, name: str) -> None:
        try:
            await self.metadata.delete_topic(name)
        except ClusterError as exc:
            raise TopicError(exc.code, str(exc)) from None
        await self._visible(lambda image: name not in image.topics)

    async def add_partitions(self, name: str, total: int, assignments: Assignments | None = None) -> None:
        try:
            await self.metadata.add_partitions(name, total, assignments)
        except ClusterError as exc:
            raise TopicError(exc.code, str(exc)) from None
        await self._visible(lambda image: name in image.topics and image.topics[name].partition_count >= total)

    async def alter_topic_configs(self, name: str, decide: DecideConfigs, validate_only: bool) -> None:
        """`decide(current overrides, storage mode)` -> the new overrides, or raises. The
        overrides are etcd's, changed by compare-and-swap; every broker applies them when its
        image shows them (`_on_metadata` -> TopicRegistry.host), this one before answering."""
        if validate_only:
            record = self.metadata.image.topics.get(name)
            if record is None:
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist")
            decide(dict(record.configs), record.storage_mode)
            return
        try:
            record = await self.metadata.alter_topic_configs(name, decide)
        except ClusterError as exc:
            raise TopicError(exc.code, str(exc)) from None
        await self._visible(lambda image: name not in image.topics or image.topics[name].configs == record.configs)
        log.info("altered the configs of topic %s in etcd: %s", name, record.configs or "(defaults)")

    async def _visible(self, predicate: Callable[[MetadataImage], bool]) -> None:
        """Until this broker has applied an image that shows the change."""
        def applied() -> bool:
            return self._applied_image is not None and predicate(self._applied_image)
        try:
            async with self._applied:
                await asyncio.wait_for(self._applied.wait_for(applied), ADMIN_VISIBLE_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("an admin change did not reach this broker's metadata in %.0f s", ADMIN_VISIBLE_TIMEOUT_S)


def _current_replicas(image: MetadataImage, name: str, record: TopicRecord) -> list[tuple[int, ...]]:
    """Each partition's replicas as its own state says: a reassignment changes them there, the
    topic record keeps the placement at creation."""
    return [state.replicas if (state := image.partition(name, i)) is not None else replicas
            for i, replicas in enumerate(record.replicas)]


def _replica_state(state: ClusterPartitionState) -> PartitionState:
    return PartitionState(state.leader, state.leader_epoch, state.partition_epoch, tuple(state.replicas),
                          tuple(state.isr))
