"""Which groups this broker coordinates: those of the `__consumer_offsets` partitions it leads.

Kafka's GroupMetadataManager keeps `ownedPartitions`; its onElection loads a partition's
groups and offsets from the log when the broker becomes that partition's leader, and its
onResignation unloads them when leadership moves away. This is the same, driven by metadata:
after every image the cluster member applies (cluster_member.py makes each hosted partition
leader or follower first, as the earlier listener), `sync` compares the partitions this
broker leads with the ones the coordinator has loaded:

- newly led: replay the partition from its log start to its log end into the coordinator (the
  new leader's whole log is the partition's truth: what lies above the HW is what the
  followers will copy), then coordinate its groups;
- no longer led (a follower now, not hosted, or the topic deleted): unload its groups, whose
  parked JoinGroup / SyncGroup requests get NOT_COORDINATOR.

A replay runs on the event loop without awaiting, so no request ever sees a partition half
loaded (Kafka needs COORDINATOR_LOAD_IN_PROGRESS for that window; this broker has none).
Losing leadership and gaining it back in a later epoch without being a follower in between
cannot change the log (a broker elected again was in the ISR, so it missed no record), so
only the role is compared, not the epoch.

A single broker leads every partition of the topic from the start: it replays the whole
topic once, at start-up, and coordinates every group, also before the topic exists
(`local_partitions` stays None).
"""

from __future__ import annotations

import logging

from replica.partition import Partition

from broker.groups import offsets_replay
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import OffsetsStore
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from broker.groups.consumer.replay import replaying
from broker.groups.share import share_group_replay
from broker.groups.streams import replay as streams_replay
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.streams.coordinator import StreamsGroupCoordinator

log = logging.getLogger(__name__)


class GroupLoading:
    def __init__(self, coordinator: GroupCoordinator, consumer_groups: ConsumerGroupCoordinator,
                 share_groups: ShareGroupCoordinator, store: OffsetsStore, cluster: bool,
                 streams_groups: StreamsGroupCoordinator) -> None:
        self._coordinator = coordinator
        self._consumer_groups = consumer_groups  # KIP-848 groups: their records share the partitions
        self._share_groups = share_groups  # KIP-932 groups: theirs too
        self._streams_groups = streams_groups  # KIP-1071 groups: theirs too
        self._store = store
        self._cluster = cluster
        if cluster:
            coordinator.local_partitions = set()  # nothing is ours until the metadata says so

    def start(self) -> None:
        """At start-up, on the event loop (restored members' session timers need it); a
        cluster member has already loaded what the first image made it lead."""
        if self._cluster:
            self.sync()
        else:
            offsets_replay.load(self._coordinator, self._replaying(self._store.replay()))

    async def on_metadata(self, image, change) -> None:
        """A ClusterMetadata listener (called after the cluster member applied the image)."""
        self.sync()

    def sync(self) -> None:
        owned = self._coordinator.local_partitions
        if owned is None:
            return
        led = self._led_partitions()
        for index in sorted(owned - set(led)):
            self._unload(index)
        for index in sorted(set(led) - owned):
            self._load(index, led[index])

    def _led_partitions(self) -> dict[int, Partition]:
        topic = self._store.topic()
        if topic is None:
            return {}
        return {index: p for index, p in enumerate(topic.partitions) if p is not None and p.is_leader}

    def _load(self, index: int, partition: Partition) -> None:
        loaded = offsets_replay.load(self._coordinator, self._replaying(self._store.replay_partition(partition)))
        self._coordinator.local_partitions.add(index)
        log.info("coordinating the groups of %s-%d (leader epoch %d): %d loaded", offsets_log.TOPIC, index,
                 partition.leader_epoch, len(loaded))

    def _replaying(self, records):
        """Records past the consumer, share and streams groups' replays, on to offsets_replay.load."""
        return replaying(self._consumer_groups, share_group_replay.replaying(
            self._share_groups, streams_replay.replaying(self._streams_groups, records)))

    def _unload(self, index: int) -> None:
        self._coordinator.local_partitions.discard(index)
        topic = self._store.topic()
        count = len(topic.partitions) if topic is not None else None
        gone = [g for g in self._coordinator.groups.values()
                if count is None or offsets_log.partition_for(g.group_id, count) == index]
        for group in gone:
            self._coordinator.unload(group)
        moved = [g for g in self._consumer_groups.groups.values()
                 if count is None or offsets_log.partition_for(g.group_id, count) == index]
        for consumer_group in moved:
            self._consumer_groups.unload(consumer_group)
        streams = self._streams_groups
        for streams_group in [g for g in streams.groups.values()
                              if count is None or offsets_log.partition_for(g.group_id, count) == index]:
            streams.unload(streams_group)
        shared = [g for g in self._share_groups.groups
                  if count is None or offsets_log.partition_for(g, count) == index]
        for group_id in shared:
            self._share_groups.unload(group_id)
        log.info("no longer coordinating the groups of %s-%d: %d unloaded", offsets_log.TOPIC, index,
                 len(gone) + len(moved) + len(shared))
