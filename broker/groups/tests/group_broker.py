"""What the group coordinators' unit tests build on: one cluster member's real parts below the
coordinators, on a ManualClock.

A TopicRegistry on a real engine in a temp dir hosts `__consumer_offsets` (PARTITIONS
partitions, replicas ME and OTHER) and a topic "t" the groups consume (one partition, led
elsewhere); real replica.Partitions are made leader / follower as the replica manager does
(make_leader / make_follower with the state etcd would hold) and written through the real write
path. Only etcd is left out: `GroupBroker` stands for the broker object. `Coordinators` are
the classic, KIP-848, streams and share group coordinators wired as broker/broker.py wires them,
their committed offsets and their loading, all on one clock.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import NamedTuple

from broker.coordinator.clock import Clock, ManualClock
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicServices
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group_loading import GroupLoading
from broker.groups.group_timers import GroupTimers
from broker.groups.offsets import GroupOffsets
from broker.groups.offsets_store import COMMIT_TIMEOUT_S, OffsetsStore, offsets_topic_shape
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.share.share_partitions import SharePartitions
from broker.groups.streams.coordinator import StreamsGroupCoordinator
from broker.settings.config_from_settings import config_with
from broker.settings.group_configs import share_config_for
from broker.storage.modes import StorageModes
from broker.topics import TopicRegistry
from broker.cluster.single_broker_view import SingleBrokerView
from broker.topic_admin import TopicAdministrator
from replica.group_commit import GroupCommits
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.write_path import WritePath

ME, OTHER = 1, 2
PARTITIONS = 2


class GroupBroker:
    """What OffsetsStore uses of the broker: its config, topics, metadata view, topic creation and
    write path."""

    def __init__(self, data_dir, mode: str, offsets_configs: dict[str, str] | None = None,
                 partitions: int = PARTITIONS) -> None:
        self.partitions = partitions  # of __consumer_offsets
        self.config = config_with(data_dir=str(data_dir), storage_mode=mode, node_id=ME, etcd="http://unused:2379")
        self.storage = StorageModes(data_dir, mode)
        self.topics = TopicRegistry(self.config, self.storage)
        self.topics.load()
        self.write_path = WritePath(GroupCommits(self.storage.commit_writes))
        self.view = SingleBrokerView(ME, "localhost", lambda: 9092, self.topics, "groups-cluster")
        self.topic_admin = TopicAdministrator(self.config, self.view, self.topics)
        asyncio.run(self.topics.host("t", uuid.uuid4(), {}, [(OTHER,)]))
        asyncio.run(self.topics.host(offsets_log.TOPIC, uuid.uuid4(), offsets_configs or {}, [(ME, OTHER)] * partitions))

    def partition(self, group_id: str) -> Partition:
        partition = self.topics.partition(offsets_log.TOPIC, offsets_log.partition_for(group_id, self.partitions))
        assert isinstance(partition, Partition)
        return partition

    def lead_all(self, epoch: int) -> None:
        """This broker leads every `__consumer_offsets` partition, alone in the ISR (a write
        counts as soon as it is in the log)."""
        for index in range(self.partitions):
            lead(self.topics.partition(offsets_log.TOPIC, index), epoch)


def lead(partition, epoch: int, isr: tuple[int, ...] = (ME,)) -> None:
    partition.make_leader(PartitionState(ME, epoch, epoch, (ME, OTHER), isr))


def follow(partition, epoch: int) -> None:
    partition.make_follower(PartitionState(OTHER, epoch, epoch, (ME, OTHER), (ME, OTHER)))


def offsets_store(broker, partitions: int, clock: Clock, commit_timeout_s: float = COMMIT_TIMEOUT_S) -> OffsetsStore:
    """An OffsetsStore of `partitions` on the broker's (or cluster member's) topics, metadata view,
    topic creation and write path."""
    services = TopicServices(broker.topics, broker.view, broker.topic_admin, broker.write_path)
    topic_log = InternalTopicLog(services, offsets_log.TOPIC, offsets_topic_shape(broker.config, partitions))
    return OffsetsStore(topic_log, broker.write_path, clock, commit_timeout_s)


class Coordinators(NamedTuple):
    classic: GroupCoordinator
    consumer: ConsumerGroupCoordinator
    streams: StreamsGroupCoordinator
    share: ShareGroupCoordinator
    offsets: GroupOffsets
    loading: GroupLoading
    timers: GroupTimers
    clock: ManualClock


def coordinators(broker: GroupBroker, clock: ManualClock, commit_timeout_s: float = COMMIT_TIMEOUT_S,
                 **settings) -> Coordinators:
    """One broker's group coordinators on `clock` (`settings`: config_with's, e.g.
    group_consumer_session_timeout_ms; `commit_timeout_s`: how long a write waits for the
    followers, in real time: the write path's). The share groups' persister is left out: nothing
    here reaches a share-partition's state."""
    config = config_with(**settings)
    store = offsets_store(broker, PARTITIONS, clock, commit_timeout_s)
    timers = GroupTimers(store.partition_index, clock)
    classic = GroupCoordinator(store, timers, 0, (1_000, 60_000))
    consumer = ConsumerGroupCoordinator(classic, store, lambda: broker.topics.topics, config.consumer_groups)
    streams = StreamsGroupCoordinator(classic, store, lambda: broker.topics.topics, lambda _g: None,
                                      config.streams_groups)
    share_settings = config.share_groups
    share = ShareGroupCoordinator(SharePartitions(None, share_settings, lambda _g: share_config_for(share_settings, {})),
                                  store, lambda: broker.topics.topics, lambda _g: None, classic.coordinator_error,
                                  timers)
    loading = GroupLoading(classic, consumer, share, store, cluster=True, streams_groups=streams, timers=timers,
                           topics=broker.topics)
    offsets = GroupOffsets(classic, store, broker.topics, None, loading.submit, loading.submit_transactional)
    return Coordinators(classic, consumer, streams, share, offsets, loading, timers, clock)


async def settled(check, what: str) -> None:
    """Let the event loop run what a timer's operation started (its partition's queue, a write
    through the write path) until check() holds: yields to the loop, never waits for a time."""
    for _ in range(10_000):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never: {what}")
