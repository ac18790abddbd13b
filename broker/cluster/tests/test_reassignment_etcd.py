"""Reassignments through ClusterMetadata against a real etcd: the start is one compare-and-swap,
the leader's AlterPartition that brings the new replica into the ISR completes it in the same
write, a cancel reverts, and every broker's image shows each step."""

from __future__ import annotations

import pytest

from broker.cluster import ClusterError

from broker.cluster.tests.harness import Members, run
from wire.error_codes import ErrorCode


def test_move_completes_in_the_alter_partition_that_admits_the_new_replica(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            admin, observer = members.live[3], members.live[2]
            await admin.create_topic("move", 1, 1, {}, "segment", assignments=[[1]])
            grown = await admin.reassign("move", 0, [2])
            assert (grown.replicas, grown.adding, grown.removing, grown.isr, grown.leader) == \
                ((2, 1), (2,), (1,), (1,), 1)
            image = await observer.wait_until_shown([grown], 5)
            assert image.partition("move", 0) == grown
            assert await admin.reassign("move", 0, [2]) is None  # already under way

            leader = members.live[1]
            done = await leader.alter_partition("move", 0, grown.leader_epoch, grown.partition_epoch, [1, 2])
            assert (done.replicas, done.isr, done.leader, done.adding, done.removing) == ((2,), (2,), 2, (), ())
            assert (done.leader_epoch, done.partition_epoch) == (grown.leader_epoch + 1, grown.partition_epoch + 1)
            image = await observer.wait_until_shown([done], 5)
            assert image.partition("move", 0) == done

            with pytest.raises(ClusterError) as exc:
                await admin.cancel_reassignment("move", 0)
            assert exc.value.code == ErrorCode.no_reassignment_in_progress
    run(scenario())


def test_cancel_reverts_and_refusals_name_kafkas_errors(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            admin = members.live[1]
            await admin.create_topic("back", 1, 2, {}, "segment", assignments=[[1, 2]])
            grown = await admin.reassign("back", 0, [1, 3])
            assert (grown.replicas, grown.adding, grown.removing) == ((1, 3, 2), (3,), (2,))
            reverted = await admin.cancel_reassignment("back", 0)
            assert (reverted.replicas, reverted.isr, reverted.adding, reverted.removing, reverted.leader) == \
                ((1, 2), (1, 2), (), (), 1)
            await members.live[3].wait_until_shown([reverted], 5)

            for args, code in ((("back", 0, [1, 9]), ErrorCode.invalid_replica_assignment),
                               (("back", 0, [2, 2]), ErrorCode.invalid_replica_assignment),
                               (("gone", 0, [1]), ErrorCode.unknown_topic_or_partition)):
                with pytest.raises(ClusterError) as exc:
                    await admin.reassign(*args)
                assert exc.value.code == code
            with pytest.raises(ClusterError) as exc:
                await admin.reassign("back", 0, [1], allow_replication_factor_change=False)
            assert exc.value.code == ErrorCode.invalid_replication_factor
            assert (await admin._store.client.get(admin._store.layout.partition_key("back", 0))).version == 3
    run(scenario())
