"""Creating, deleting, growing and reconfiguring topics in etcd, each in one transaction.

A topic and all its partition states are written together, or not at all: create compares
that the topic key does not exist (TOPIC_ALREADY_EXISTS otherwise), delete removes the topic
key and its whole partitions/<topic>/ range, add_partitions compares the topic key's mod
revision so two concurrent increases cannot both extend the same replica list, and so does
alter_configs, so two brokers changing one topic's configs at once cannot lose either change:
the loser re-reads and applies its operations to the winner's configs. A new
partition starts as Kafka's does: leader = its first replica, leader epoch 0, ISR = all replicas
(an empty log is in sync by definition), partition epoch 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from aetcd.utils import prefix_range_end

from wire.error_codes import ErrorCode
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import PartitionState, TopicRecord
from broker.cluster.etcd_store import EtcdStore, Swap
from broker.cluster.metadata_image import MetadataImage
from broker.cluster.placement import assign_replicas, check_assignments, start_index_for
from broker.settings.cordoned_log_dirs import fully_cordoned


def _unknown_topic(name: str) -> ClusterError:
    return ClusterError(ErrorCode.unknown_topic_or_partition, f"This server does not host this topic-partition: {name}.")


def initial_state(topic: str, index: int, replicas: Sequence[int]) -> PartitionState:
    return PartitionState(topic, index, leader=replicas[0], leader_epoch=0, isr=tuple(replicas),
                          partition_epoch=0, replicas=tuple(replicas))


class TopicAdmin:
    def __init__(self, store: EtcdStore, image: Callable[[], MetadataImage]) -> None:
        self._store = store
        self._image = image  # the live brokers placement may use

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: Mapping[str, str], storage_mode: str,
                           assignments: Sequence[Sequence[int]] | None = None) -> TopicRecord:
        """`assignments` (one replica list per partition), when given, decides the partition
        count and the replication factor; otherwise Kafka's placement over the live brokers."""
        live = self._image().live_broker_ids()
        if assignments:
            replicas = check_assignments(assignments, live)
        else:
            open_ = self._uncordoned(live)
            replicas = assign_replicas(open_, num_partitions, replication_factor,
                                       start_index_for(name, max(1, len(open_))))
        record = TopicRecord(name, uuid.uuid4(), dict(configs), storage_mode, tuple(map(tuple, replicas)))
        layout, tx = self._store.layout, self._store.client.transactions
        topic_key = layout.topic_key(name)
        puts = [tx.put(topic_key, layout.encode(record))]
        puts += [tx.put(layout.partition_key(name, i), layout.encode(initial_state(name, i, r)))
                 for i, r in enumerate(replicas)]
        created, _ = await self._store.transaction(compare=[tx.version(topic_key) == 0], success=puts)
        if not created:
            raise ClusterError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        return record

    def _uncordoned(self, live: set[int]) -> set[int]:
        """The live brokers Kafka's placement may give new replicas: not those whose log dirs
        are all cordoned (KIP-1066, broker/settings/cordoned_log_dirs.py). Explicit assignments
        may still name them, as Kafka 4.3.1 allows."""
        configs = self._image().broker_configs
        return {b for b in live if not (str(b) in configs and fully_cordoned(configs[str(b)].configs))}

    async def delete_topic(self, name: str) -> TopicRecord:
        layout, tx = self._store.layout, self._store.client.transactions
        topic_key = layout.topic_key(name)
        partitions = layout.partitions_prefix(name)
        deleted, responses = await self._store.transaction(
            compare=[tx.version(topic_key) > 0],
            success=[tx.get(topic_key), tx.delete(topic_key),
                     tx.delete(partitions, range_end=prefix_range_end(partitions))])
        if not deleted:
            raise _unknown_topic(name)
        _, record = layout.decode(topic_key, responses[0][0][0])
        return record

    async def alter_configs(self, name: str,
                            decide: Callable[[dict[str, str], str], dict[str, str]]) -> TopicRecord:
        """Replace the topic's config overrides with `decide(current overrides, storage mode)`,
        which may raise to refuse (its exception propagates); returns the record written (or
        the unchanged one when `decide` changed nothing)."""
        layout, tx = self._store.layout, self._store.client.transactions
        topic_key = layout.topic_key(name)

        def attempt(record: TopicRecord | None) -> Swap[TopicRecord]:
            if record is None:
                raise _unknown_topic(name)
            configs = decide(dict(record.configs), record.storage_mode)
            if configs == record.configs:
                return Swap((), record)
            changed = replace(record, configs=dict(configs))
            return Swap([tx.put(topic_key, layout.encode(changed))], changed)

        return await self._store.compare_and_swap(topic_key, attempt, f"changing the configs of {name}")

    async def add_partitions(self, name: str, total: int,
                             assignments: Sequence[Sequence[int]] | None = None) -> TopicRecord:
        """Grow `name` to `total` partitions; `assignments` lists replicas for the new ones only."""
        layout, tx = self._store.layout, self._store.client.transactions
        topic_key = layout.topic_key(name)

        def attempt(record: TopicRecord | None) -> Swap[TopicRecord]:
            if record is None:
                raise _unknown_topic(name)
            new_replicas = self._new_replicas(record, total, assignments)
            grown = replace(record, replicas=record.replicas + tuple(map(tuple, new_replicas)))
            puts = [tx.put(topic_key, layout.encode(grown))]
            puts += [tx.put(layout.partition_key(name, record.partition_count + i),
                            layout.encode(initial_state(name, record.partition_count + i, r)))
                     for i, r in enumerate(new_replicas)]
            return Swap(puts, grown)

        return await self._store.compare_and_swap(topic_key, attempt, f"adding partitions to {name}")

    def _new_replicas(self, record: TopicRecord, total: int,
                      assignments: Sequence[Sequence[int]] | None) -> list[list[int]]:
        current = record.partition_count
        if total < current:
            raise ClusterError(ErrorCode.invalid_partitions,
                               f"Topic currently has {current} partitions, which is higher than the requested {total}.")
        if total == current:
            raise ClusterError(ErrorCode.invalid_partitions, f"Topic already has {current} partitions.")
        live = self._image().live_broker_ids()
        rf = len(record.replicas[0]) if record.replicas else 1
        if assignments:
            if len(assignments) != total - current:
                raise ClusterError(ErrorCode.invalid_replica_assignment,
                                   f"Increasing the number of partitions by {total - current} but "
                                   f"{len(assignments)} assignments provided.")
            return check_assignments(assignments, live, expected_length=rf)
        brokers = sorted(self._uncordoned(live))
        first_leader = record.replicas[0][0] if record.replicas else 0
        # Kafka continues the topic's layout: start where partition 0's leader sits
        start = next((i for i, b in enumerate(brokers) if b >= first_leader), 0)
        return assign_replicas(brokers, total - current, rf, start, first_partition=current)

