"""Fencing on a majority's evidence (broker/cluster/fencing.py): the counting rule as a pure
function of an image, then the whole path against a real etcd — votes written under the
voters' leases, the lease revoked only once a majority's votes are there."""

from __future__ import annotations

import asyncio
from types import MappingProxyType

from broker.cluster.etcd_layout import BrokerRegistration, ControllerRecord
from broker.cluster.fencing import fences, majority_suspects
from broker.cluster.metadata_image import MetadataImage

from broker.cluster.tests.harness import Members, run


def image(nodes, votes, controller=None) -> MetadataImage:
    """`votes`: {(suspect, voter): suspect broker_epoch}; node n registers with epoch 100 + n."""
    return MetadataImage(
        brokers=MappingProxyType({n: BrokerRegistration(n, "h", 9000 + n, 100 + n) for n in nodes}),
        controller=ControllerRecord(controller, 1) if controller is not None else None,
        suspicions=MappingProxyType(dict(votes)))


def test_one_peer_cannot_fence_in_a_cluster_of_three():
    # broker 1 cut off from both peers suspects them both: neither is fenced
    im = image([1, 2, 3], {(2, 1): 102, (3, 1): 103}, controller=1)
    assert not majority_suspects(im, 2) and not majority_suspects(im, 3)


def test_both_peers_fence_the_third():
    im = image([1, 2, 3], {(1, 2): 101, (1, 3): 101}, controller=2)
    assert majority_suspects(im, 1)


def test_votes_against_another_incarnation_or_from_the_unregistered_do_not_count():
    assert not majority_suspects(image([1, 2, 3], {(1, 2): 101, (1, 3): 99}), 1)  # 3 saw an older epoch
    assert not majority_suspects(image([1, 2], {(1, 2): 101, (1, 3): 101}), 1)  # 3 is not registered


def test_halves_and_pairs_fence_nobody():
    # two against two: neither half has a majority of the four
    assert not majority_suspects(image([1, 2, 3, 4], {(3, 1): 103, (3, 2): 103}), 3)
    # two brokers left: the lease alone decides
    assert not majority_suspects(image([1, 2], {(1, 2): 101}), 1)
    assert majority_suspects(image([1, 2, 3, 4, 5], {(5, 1): 105, (5, 2): 105, (5, 3): 105}), 5)


def test_the_controller_fences_unless_it_is_the_suspect():
    im = image([1, 2, 3], {(3, 1): 103, (3, 2): 103}, controller=2)
    assert fences(im, 2, 3) and not fences(im, 1, 3)
    im = image([1, 2, 3], {(2, 1): 102, (2, 3): 102}, controller=2)  # the controller is suspected
    assert fences(im, 1, 2) and fences(im, 3, 2) and not fences(im, 2, 2)


def test_a_lease_is_revoked_only_once_a_majority_suspects_it(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=10000) as members:
            one, two, three = await members.start(1, 2, 3)
            suspect = two.image.brokers[3]
            await one.suspect(suspect, True)
            await two.wait_for(lambda im: (3, 1) in im.suspicions, 5)
            await asyncio.sleep(0.5)  # time for a wrong revoke to show (nothing to wait on)
            assert three.session.lease_id == suspect.broker_epoch
            assert 3 in one.image.brokers and 3 in two.image.brokers
            await two.suspect(suspect, True)
            await one.wait_for(lambda im: 3 not in im.brokers or im.brokers[3].broker_epoch != suspect.broker_epoch, 5)
    run(scenario())


def test_a_withdrawn_vote_does_not_count(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=10000) as members:
            one, two, _ = await members.start(1, 2, 3)
            suspect = one.image.brokers[3]
            await one.suspect(suspect, True)
            await one.suspect(suspect, False)
            await two.wait_for(lambda im: (3, 1) not in im.suspicions, 5)
            await two.suspect(suspect, True)
            await one.wait_for(lambda im: (3, 2) in im.suspicions, 5)
            await asyncio.sleep(0.5)
            assert one.image.brokers[3].broker_epoch == suspect.broker_epoch
    run(scenario())
