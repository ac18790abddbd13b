"""Topic admin through etcd, against a real etcd: placement, refusals Kafka answers, delete and
grow in one transaction each, and producer-id blocks that never overlap."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from broker.cluster import ClusterError

from broker.cluster.tests.harness import Members, run
from wire.error_codes import ErrorCode


def test_rf3_on_three_brokers_each_leads_one_partition(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            record = await members.live[1].create_topic("placed", 3, 3, {"retention.ms": "1000"}, "commitlog")
            image = await members.live[2].wait_for(lambda im: len(im.partitions_of("placed")) == 3, 5)
            assert image.topics["placed"] == record
            assert record.storage_mode == "commitlog" and record.configs == {"retention.ms": "1000"}
            states = image.partitions_of("placed")
            assert sorted(p.leader for p in states) == [1, 2, 3]
            for p, replicas in zip(states, record.replicas):
                assert sorted(replicas) == [1, 2, 3]
                assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr, p.replicas) == \
                       (replicas[0], 0, 0, replicas, replicas)
    run(scenario())


def test_refusals(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            admin, _ = await members.start(1, 2)
            with pytest.raises(ClusterError) as exc:
                await admin.create_topic("big", 1, 3, {}, "segment")
            assert exc.value.code == ErrorCode.invalid_replication_factor
            with pytest.raises(ClusterError) as exc:
                await admin.create_topic("nowhere", 1, -1, {}, "segment", assignments=[[1, 7]])
            assert exc.value.code == ErrorCode.invalid_replica_assignment
            await admin.create_topic("once", 1, 2, {}, "segment")
            with pytest.raises(ClusterError) as exc:
                await admin.create_topic("once", 4, 1, {}, "segment")
            assert exc.value.code == ErrorCode.topic_already_exists
            for name, total, code in [("once", 1, ErrorCode.invalid_partitions), ("missing", 3, ErrorCode.unknown_topic_or_partition)]:
                with pytest.raises(ClusterError) as exc:
                    await admin.add_partitions(name, total)
                assert exc.value.code == code
            with pytest.raises(ClusterError) as exc:
                await admin.delete_topic("missing")
            assert exc.value.code == ErrorCode.unknown_topic_or_partition
    run(scenario())


def test_add_partitions_and_delete(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            admin, observer, _ = await members.start(1, 2, 3)
            await admin.create_topic("grow", 2, 2, {}, "segment")
            grown = await admin.add_partitions("grow", 5)
            assert grown.partition_count == 5
            explicit = await admin.add_partitions("grow", 6, assignments=[[3, 1]])
            assert explicit.replicas[5] == (3, 1)
            image = await observer.wait_for(lambda im: len(im.partitions_of("grow")) == 6, 5)
            assert [p.replicas for p in image.partitions_of("grow")] == list(explicit.replicas)
            assert Counter(r[0] for r in explicit.replicas[:5]).most_common(1)[0][1] <= 2
            deleted = await admin.delete_topic("grow")
            assert deleted.topic_id == explicit.topic_id
            image = await observer.wait_for(lambda im: "grow" not in im.topics, 5)
            assert not [k for k in image.partitions if k[0] == "grow"]
            await admin.create_topic("grow", 1, 1, {}, "segment")  # the name is free again
    run(scenario())



def test_two_concurrent_increases_grow_the_topic_once(etcd, prefix):
    """The second increase to 2 — whether it read the topic before the first wrote it (and lost
    the compare-and-swap) or after — decides on the grown topic and is refused as Kafka refuses an
    increase to the current count: partition 1 is created once."""
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            await one.create_topic("grown-once", 1, 2, {}, "segment")
            outcomes = await asyncio.gather(one.add_partitions("grown-once", 2), two.add_partitions("grown-once", 2),
                                            return_exceptions=True)
            won = [o for o in outcomes if not isinstance(o, Exception)]
            lost = [o for o in outcomes if isinstance(o, Exception)]
            assert len(won) == 1 and won[0].partition_count == 2
            assert len(lost) == 1 and isinstance(lost[0], ClusterError) and lost[0].code == ErrorCode.invalid_partitions
            image = await two.wait_for(lambda im: len(im.partitions_of("grown-once")) == 2, 5)
            assert image.topics["grown-once"] == won[0]
    run(scenario())

def test_producer_id_blocks_unique_under_concurrency(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            brokers = await members.start(1, 2, 3)
            starts = await asyncio.gather(*(b.allocate_producer_id_block(1000) for b in brokers for _ in range(15)))
            assert sorted(starts) == list(range(0, 45_000, 1000))
    run(scenario())


def test_a_broker_with_every_log_dir_cordoned_gets_no_new_replica(etcd, prefix):
    """KIP-1066: Kafka's placement skips a broker whose cordoned.log.dirs covers all its dirs
    (`*`, or both of its layouts' dirs); explicit assignments may still name it, as in Kafka
    4.3.1; with too few brokers left, INVALID_REPLICATION_FACTOR."""
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            admin, _, third = await members.start(1, 2, 3)
            await third.update_broker_configs("3", lambda c: {**c, "cordoned.log.dirs": "*"})
            await admin.wait_for(lambda im: "3" in im.broker_configs, 5)
            record = await admin.create_topic("fenced-off", 6, 2, {}, "segment")
            assert all(3 not in r for r in record.replicas)
            grown = await admin.add_partitions("fenced-off", 9)
            assert all(3 not in r for r in grown.replicas)
            explicit = await admin.add_partitions("fenced-off", 10, assignments=[[3, 1]])
            assert explicit.replicas[9] == (3, 1)
            with pytest.raises(ClusterError) as refused:
                await admin.create_topic("too-wide", 1, 3, {}, "segment")
            assert refused.value.code == ErrorCode.invalid_replication_factor

            await third.update_broker_configs("3", lambda c: {**c, "cordoned.log.dirs": "/d/one"})  # one dir open
            await admin.wait_for(lambda im: im.broker_configs["3"].configs["cordoned.log.dirs"] == "/d/one", 5)
            assert any(3 in r for r in (await admin.create_topic("open-again", 6, 2, {}, "segment")).replicas)
    run(scenario())
