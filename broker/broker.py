"""The broker's state, shared by every handler: stores, topics, ids, background work."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from pathlib import Path

from broker.api.context import ApiContext
from broker.api.coordinator_topics import CoordinatorKind, CoordinatorTopic
from broker.fetch_sessions import FetchSessionCache
from broker.settings.config import BrokerConfig
from broker.settings.cordoned_log_dirs import fully_cordoned
from broker.settings.group_configs import share_config_for
from broker.settings.dynamic_broker_store import BrokerConfigStore, ClusterBrokerConfigStore
from broker.settings.runtime_configs import RuntimeConfigs
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group_config_store import ClusterGroupConfigStore, GroupConfigStore
from broker.coordinator.clock import SystemClock
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicServices
from broker.groups.group_loading import GroupLoading
from broker.groups.group_timers import GroupTimers
from broker.groups.group_service import GroupCoordinatorService
from broker.groups.offsets import GroupOffsets
from broker.groups.offsets_store import OffsetsStore, offsets_topic_shape
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.streams.coordinator import StreamsGroupCoordinator
from broker.groups.share.partition_end_offsets import PartitionEndOffsets
from broker.groups.share.share_group_admin import ShareGroupAdmin
from broker.groups.share.share_groups import ShareGroups
from broker.groups.share.share_partitions import SharePartitions
from broker.groups.share.state_coordinator import ShareStateCoordinator
from broker.groups.share.state_persister import ShareStatePersister
from broker.groups.share.state_store import ShareStateStore
from broker.cluster.image_view import ClusterImageView
from broker.cluster.view import ClusterView
from broker.security.acl.cluster_store import ClusterAclStore
from broker.security.acl.checks import RequestAuthorizer
from broker.security.acl.store import AclStore
from broker.security.authentication import BrokerSecurity
from broker.security.security_admin import SecurityAdministration
from broker.cluster.single_broker_view import SingleBrokerView
from broker.observability.console.broker_state import ConsoleSources
from broker.observability.metrics import BrokerMetrics
from broker.observability.metrics_collector import StateSources
from broker.storage.log_cleaner_service import LogCleanerService
from broker.storage.log_dir_move import LogDirMoves
from replica.change_feed import ChangeFeed
from replica.group_commit import GroupCommits
from replica.partition import Partition, now_ms
from replica.write_path import WritePath
from broker import features
from broker.feature_store import ClusterFeatureStore, FeatureStore
from broker.local_replicas import LocalReplicas
from broker.producer_ids import ProducerIdAllocator
from broker.quotas.cluster_store import ClusterQuotaStore
from broker.quotas.manager import ClientQuotaManager
from broker.quotas.quota_admin import QuotaAdministration
from broker.quotas.store import QuotaStore
from broker.storage.health import StorageHealth
from broker.storage.modes import StorageModes
from broker.storage.periodic_flush import PeriodicFlush
from broker.storage.producer_snapshots import ProducerSnapshotTask
from broker.topic_admin import TopicAdministrator
from broker.topics import TopicRegistry
from broker.txn.coordinator import TransactionCoordinator
from broker.txn.marker_append import MarkerAppender
from broker.txn.markers import MarkerWriter
from broker.txn.partition_verifier import PartitionVerifier
from broker.txn.remote_markers import RemoteMarkers
from broker.txn.service import TransactionServices
from broker.txn.state_store import TxnStateStore
from broker.txn.txn_shard import TxnShardConfig

log = logging.getLogger(__name__)

# Partitions a retention round checks between two turns of the loop: each may read its first
# batches from disk (a round over 3,000 idle commitlog partitions: 59 ms, so ~1 s at 50,000).
RETENTION_YIELD_EVERY = 200


def _cluster_id(data_dir: Path) -> str:
    """Kafka keeps cluster.id in meta.properties; so do we."""
    path = data_dir / "meta.properties"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1]
    cid = uuid.uuid4().hex[:22]
    path.write_text(f"version=1\ncluster.id={cid}\n")
    return cid


class Broker:
    def __init__(self, config: BrokerConfig, metrics: BrokerMetrics | None = None) -> None:
        """`metrics`: what the requests, fsyncs and transactions are counted into (--metrics-port)."""
        self.config = config
        self.metrics = metrics
        data_dir = Path(config.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self.stored_cluster_id = _cluster_id(data_dir)  # meta.properties'; the cluster's: view.cluster_id
        self.storage = StorageModes(data_dir, config.storage_mode, dict(
            commitlog_file_size=config.commitlog_file_bytes, index_slots=config.index_hash_slots,
            index_entries=config.index_max_entries,
            file_delete_delay_ms=config.log_defaults.file_delete_delay_ms),
            max_open_files=config.max_open_segment_files)
        self.storage_health = StorageHealth(data_dir, config.min_free_bytes)
        self.security = BrokerSecurity(config)  # SASL mechanisms and credentials
        # Every append this broker makes as a leader: produce, markers, the coordinators' records.
        self.write_path = WritePath(GroupCommits(self.storage.commit_writes, self._flush_together),
                                    self.storage_health.claim, self.storage_health.warn)
        changes = ChangeFeed()  # which partitions' logs changed: the periodic tasks visit those alone
        self.topics = TopicRegistry(config, self.storage, changes)
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)  # followers'
        # subscribed before load: the partitions opened there are their first rounds' work
        self.periodic_flush = PeriodicFlush(self.topics, self.storage, changes.subscribe())  # flush.ms
        self.producer_snapshots = ProducerSnapshotTask(changes.subscribe())  # what a restart need not replay
        self.topics.load()
        if metrics is not None:
            metrics.topics_by_id = self.topics.by_id  # a Fetch's topic ids named in its failure counts
        self.log_dirs = LogDirMoves(data_dir, self.topics, self.storage,
                                     config.alter_log_dirs_max_bytes_per_s)  # AlterReplicaLogDirs' moves
        # The one place that asks whether this broker is in a cluster: everything after asks
        # the view (broker/cluster/view.py), which both kinds answer alike.
        member = None
        if config.etcd:  # only a clustered broker loads the etcd client (aetcd, gRPC): 40% of a start's CPU
            from broker.cluster.member import ClusterMember
            member = ClusterMember(config, self.stored_cluster_id, self.topics,
                                   lambda: self.configs.apply_topic_defaults(),  # RuntimeConfigs needs the member
                                   self.write_path.commits.sync, self.storage.commit_writes)
        if member is not None:
            self.security.scram = member.scram  # the SCRAM users and delegation tokens: etcd's
            self.security.tokens.store = member.token_store
            self.view: ClusterView = ClusterImageView(member)
            self.producer_ids = ProducerIdAllocator(data_dir, member.metadata.allocate_producer_id_block)
        else:
            self.view = SingleBrokerView(config.node_id, config.advertised, lambda: config.port, self.topics,
                                         self.stored_cluster_id,
                                         cordoned=lambda: fully_cordoned(self.configs.broker_config_layers()[0]))
            self.producer_ids = ProducerIdAllocator(data_dir)
        # CreateTopics, DeleteTopics, CreatePartitions, Metadata's auto-creation, the internal topics
        self.topic_admin = TopicAdministrator(config, self.view, self.topics)
        # ACLs: none without --authorizer; etcd's on a cluster member
        self.acls: AclStore | ClusterAclStore | None = None
        if config.authorizer is not None:
            self.acls = (ClusterAclStore(member.metadata, config.authorizer) if member is not None
                         else AclStore(data_dir, config.authorizer))
        # Client quotas (Describe/AlterClientQuotas): what is stored (etcd's on a cluster member), and
        # their enforcement.
        self.client_quotas = ClusterQuotaStore(member.metadata) if member is not None else QuotaStore(data_dir)
        self.quotas = ClientQuotaManager(config.quota_window_num, config.quota_window_size_seconds,
                                         self.client_quotas.quotas)
        # What the coordinators' internal topics use: made on first use, written through the write path.
        topic_services = TopicServices(self.topics, self.view, self.topic_admin, self.write_path)
        # Every kind of group's time and timers: those of its __consumer_offsets partition.
        group_clock = SystemClock()
        offsets_topic = InternalTopicLog(topic_services, offsets_log.TOPIC,
                                         offsets_topic_shape(config, config.offsets_topic_partitions))
        self.offsets_store = OffsetsStore(offsets_topic, self.write_path, group_clock)
        group_timers = GroupTimers(self.offsets_store.partition_index, group_clock)
        self.groups = GroupCoordinator(
            self.offsets_store, group_timers, config.group_initial_rebalance_delay_ms,
            (config.group_min_session_timeout_ms, config.group_max_session_timeout_ms))
        self.consumer_groups = ConsumerGroupCoordinator(self.groups, self.offsets_store, lambda: self.topics.topics,
                                                        config.consumer_groups)
        self.streams_groups = StreamsGroupCoordinator(self.groups, self.offsets_store, lambda: self.topics.topics,
                                                      lambda g: self.group_service.other_kind(g, "streams"),
                                                      config.streams_groups)
        # Dynamic broker configs (AlterConfigs of BROKER) and groups' own configs (of GROUP):
        # etcd's on a cluster member.
        self.configs = RuntimeConfigs(
            config, ClusterBrokerConfigStore(member.metadata) if member is not None else BrokerConfigStore(data_dir),
            ClusterGroupConfigStore(member.metadata) if member is not None else GroupConfigStore(data_dir),
            self.topics.set_defaults, self.log_dirs.dirs)
        self.configs.apply_topic_defaults()  # a cluster member's once its metadata image is in (member.py)
        # Share-partition states: records of __share_group_state, at the leader of the key's partition.
        self.share_state_store = ShareStateStore(topic_services, config.share_groups)
        self.share_states = ShareStateCoordinator(self.topics, self.share_state_store)
        self._share_persister = ShareStatePersister(self.view, config.node_id, self.share_state_store,
                                                    self.share_states, member)
        self.share_groups = ShareGroupCoordinator(
            SharePartitions(self._share_persister, config.share_groups,
                            lambda group: share_config_for(config.share_groups, self.configs.group_configs(group))),
            self.offsets_store, lambda: self.topics.topics,
            lambda g: self.group_service.other_kind(g), self.groups.coordinator_error, group_timers)
        self.group_loading = GroupLoading(self.groups, self.consumer_groups, self.share_groups, self.offsets_store,
                                          cluster=member is not None, streams_groups=self.streams_groups,
                                          timers=group_timers, topics=self.topics)
        # the lag's end offsets, from the leaders
        self._share_end_offsets = PartitionEndOffsets(self.topics, self.view, config.node_id, member)
        self.share_admin = ShareGroupAdmin(self.share_groups, self._share_persister, self.share_state_store,
                                           self.topics, self._share_end_offsets,
                                           lambda g: self.group_service.other_kind(g))
        self.txn_store = TxnStateStore(topic_services, config)  # transactions' state: __transaction_state
        # A leader's check with the coordinator before a transaction's first batch (KIP-890).
        self.txn_verifier = PartitionVerifier(lambda: self.transactions, self.txn_store, self.topics, self.view,
                                              config, member)
        # Committed offsets (TxnOffsetCommit v5+ enrols in a transaction through the verifier),
        # and the one door to every kind of group the handlers use.
        self.group_offsets = GroupOffsets(self.groups, self.offsets_store, self.topics, self.txn_verifier,
                                          self.group_loading.submit, self.group_loading.submit_transactional)
        self.group_service = GroupCoordinatorService(self.groups, self.group_offsets, self.consumer_groups,
                                                     self.streams_groups, self.share_groups, self.share_admin)
        # Finalized feature levels (UpdateFeatures; ApiVersions v3+ shows them): etcd's on a cluster member.
        bootstrap = features.bootstrap_levels(config.transaction_version)
        self.features = (ClusterFeatureStore(member.metadata, bootstrap) if member is not None
                         else FeatureStore(data_dir, bootstrap))
        # Markers for partitions led elsewhere go as WriteTxnMarkers (one broker leads them all).
        self._remote_markers = RemoteMarkers(member, config.node_id) if member is not None else None
        # Markers for partitions led here: a replicated one in __consumer_offsets ends the
        # producer's pending transactional offsets there (txn/ imports no groups/).
        markers = MarkerAppender(self.topics, self.write_path, {offsets_log.TOPIC: self.group_offsets.end_transaction})
        marker_writer = MarkerWriter(self.topics, self.view, config.node_id, markers, self._remote_markers)
        self.transactions = TransactionCoordinator(
            self.txn_store, self.producer_ids, marker_writer,
            config.txn_max_timeout_ms,
            TxnShardConfig(config.txn_id_expiration_ms, config.txn_abort_timed_out_interval_ms,
                           config.txn_remove_expired_interval_ms,
                           lambda: self.features.level(features.TRANSACTION_VERSION)),
            cluster=member is not None, end_steps=self._transaction_end_step)
        if member is not None:  # after the member's own listener: roles first, then coordinators
            member.metadata.add_listener(self.group_loading.on_metadata)
            member.metadata.add_listener(self.transactions.on_metadata)
            member.metadata.add_listener(self.share_states.on_metadata)
        self.authorizer = RequestAuthorizer(lambda: self.acls)
        # What every handler is given (broker/api/context.py): the services above, typed.
        transactions = TransactionServices(self.transactions, self.producer_ids, markers, self.txn_verifier,
                                           self.configs.txn_partition_verification)
        coordinator_topics: dict[CoordinatorKind, CoordinatorTopic] = {
            CoordinatorKind.GROUP: self.offsets_store, CoordinatorKind.TRANSACTION: self.txn_store,
            CoordinatorKind.SHARE: self.share_state_store}
        shares = ShareGroups(self.share_groups, self.share_admin, self.groups.coordinator_error,
                             self.group_service.other_kind)
        replicas = LocalReplicas(self.configs.broker_config_layers, self.write_path, self.fetch_sessions,
                                 self.quotas, self.log_dirs)
        self.api = ApiContext(config=config, authorizer=self.authorizer, view=self.view,
                              topics=self.topics, configs=self.configs,
                              security=SecurityAdministration(self.security, self.acls),
                              client_quotas=QuotaAdministration(self.client_quotas, self.quotas.hosts),
                              features=self.features, transactions=transactions,
                              coordinator_topics=coordinator_topics, share_groups=shares,
                              share_states=self.share_states, topic_admin=self.topic_admin,
                              mutation_quotas=self.quotas, replicas=replicas, groups=self.group_service)
        # What the metrics port reads (metrics_collector.py, the console): the services above.
        self.observed = ConsoleSources(self.api, StateSources(config.node_id, self.topics, self.groups, self.quotas,
                                                              self.view, self.storage),
                                       self.log_dirs, self.security)
        self._tasks: list[asyncio.Task] = []
        self.cleaner: LogCleanerService | None = None

    def _transaction_end_step(self, step: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.transaction_end_step(step, seconds)

    def connection_closed(self, connection_id: int) -> None:
        """The transport's word that a client connection closed: what it opened ends with it."""
        self.share_groups.connection_closed(connection_id)

    def _flush_together(self, group, partitions: list[Partition]) -> None:
        """The write path's fsync (in a worker thread), timed into /metrics when they are served."""
        flush = Partition.flush_together if self.metrics is None else self.metrics.timed_fsync(Partition.flush_together)
        flush(group, partitions)

    def start_background(self) -> None:
        self.group_loading.start()  # needs the running loop for session timers
        self.transactions.start()  # its shards' timers abort timed-out transactions and expire ids
        self._tasks.append(asyncio.create_task(self._retention_loop()))
        if self.config.log_cleaner_enable:
            self.cleaner = LogCleanerService(self.config, self.topics, asyncio.get_running_loop())
            self.cleaner.start()
        self._tasks.append(asyncio.create_task(self.periodic_flush.run()))
        self._tasks.append(asyncio.create_task(self.producer_snapshots.run()))
        if self.security.tokens.enabled:  # delegation.token.expiry.check.interval.ms
            self._tasks.append(asyncio.create_task(self.security.tokens.sweep_loop()))

    async def _retention_loop(self) -> None:
        interval = self.config.retention_check_ms / 1000
        while True:
            await asyncio.sleep(interval)
            await self.enforce_retention()

    async def enforce_retention(self) -> None:
        """One retention round over every hosted partition (a partition's first batches are read
        to learn their age), giving the loop back every RETENTION_YIELD_EVERY of them, then one
        reclaim per engine for the shared files nothing needs any more."""
        now = now_ms()
        for i, partition in enumerate(list(self.topics.all_partitions()), 1):
            if i % RETENTION_YIELD_EVERY == 0:
                await asyncio.sleep(0)
            if self.topics.partition(partition.topic, partition.index) is not partition:
                continue  # deleted or moved away while the round gave the loop back
            try:
                deleted = partition.enforce_retention(now)
            except Exception:
                log.exception("retention failed for %s-%d", partition.topic, partition.index)
                continue
            if deleted:
                log.info(
                    "retention deleted %d bytes of %s-%d; log start offset now %d",
                    deleted, partition.topic, partition.index, partition.log_start_offset,
                )
        for store in self.storage.opened().values():
            store.reclaim()

    async def join_cluster(self) -> None:
        """A cluster member registers in etcd and applies the cluster's metadata (its logs
        open, its leaderships start) before start_background; one broker has nothing to do."""
        await self.view.start()

    async def controlled_shutdown(self) -> None:
        """SIGTERM's first step, while still serving: a cluster member hands its leaderships
        over (Kafka's controlled shutdown); one broker has nothing to hand over."""
        await self.view.controlled_shutdown()

    async def close(self) -> None:
        self.share_groups.close()
        await self.transactions.close()
        if self._remote_markers is not None:
            await self._remote_markers.close()
        await self._share_persister.close()
        await self._share_end_offsets.close()
        await self.txn_verifier.close()
        if self.cleaner is not None:
            await self.cleaner.stop()  # its last swap runs on the loop, before the stores close
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self.periodic_flush.in_flight is not None:
            try:
                await self.periodic_flush.in_flight
            except Exception:
                log.exception("periodic flush failed")
        await self.view.close()
        await self.log_dirs.stop()
        try:  # after the last append: a clean restart replays nothing
            await self.producer_snapshots.close()
        except Exception:
            log.exception("producer-state snapshots at shutdown failed")
        await self.topics.worker.close()  # its last removals checkpoint the commitlog store
        self.write_path.commits.close()  # a group commit's fsync still running ends before its files close
        self.storage.close()
        log.info("broker stopped cleanly (pid %d)", os.getpid())
