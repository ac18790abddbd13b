"""The image: changes computed between snapshots, and kept current across an etcd restart."""

from __future__ import annotations

import asyncio
import logging

import aetcd

from broker.cluster.etcd_store import EtcdStore
from broker.cluster.metadata_watch import MetadataWatch
from broker.cluster.etcd_layout import BrokerRegistration, EtcdLayout, PartitionState
from broker.cluster.metadata_image import ImageBuilder, MetadataChange

from broker.cluster.tests.harness import Members, run


def test_change_names_a_reregistered_broker_as_gone_and_joined():
    layout = EtcdLayout("/x/")
    builder = ImageBuilder(layout)
    builder.put(layout.broker_key(1), layout.encode(BrokerRegistration(1, "h", 1, broker_epoch=10)), 2)
    builder.put(layout.broker_key(2), layout.encode(BrokerRegistration(2, "h", 2, broker_epoch=11)), 3)
    state = PartitionState("t", 0, 1, 0, (1, 2), 0, (1, 2))
    builder.put(layout.partition_key("t", 0), layout.encode(state), 4)
    before = builder.snapshot()
    builder.delete(layout.broker_key(1), 5)
    builder.put(layout.broker_key(1), layout.encode(BrokerRegistration(1, "h", 1, broker_epoch=12)), 6)
    builder.delete(layout.partition_key("t", 0), 7)
    change = MetadataChange.between(before, builder.snapshot())
    assert change.brokers_restarted == {1} and change.brokers_gone == {1}
    assert dict(change.partitions) == {("t", 0): (state, None)}
    assert before.brokers[1].broker_epoch == 10  # snapshots are not changed afterwards
    assert not MetadataChange.between(before, before)


def test_image_catches_up_after_etcd_restarts(own_etcd):
    async def scenario():
        async with Members(own_etcd.endpoint, "/restart/", session_timeout_ms=3000) as members:
            watcher, writer = await members.start(1, 2)
            await writer.create_topic("before", 1, 1, {}, "segment")
            await watcher.wait_for(lambda im: "before" in im.topics, 5)
            own_etcd.stop()
            own_etcd.start()
            await writer.create_topic("after", 1, 2, {}, "segment")
            image = await watcher.wait_for(lambda im: "after" in im.topics, 10)
            assert image.partition("after", 0) is not None and "before" in image.topics
            assert watcher.has_session() and writer.has_session()
    run(scenario())


def test_the_first_read_is_tried_again_until_etcd_answers(own_etcd, caplog):
    """A member's start reads the whole prefix once; etcd paused (SIGSTOP) past the client's RPC
    timeout made that read, and the broker's start, fail (seen on a loaded machine: one read
    over 1 s). It is tried again until etcd answers, and the image then holds what etcd holds."""
    layout = EtcdLayout("/first-read/")

    async def scenario():
        client = aetcd.Client(own_etcd.host, own_etcd.client_port, timeout=0.3)
        try:
            await client.put(layout.broker_key(7), layout.encode(BrokerRegistration(7, "h", 7, broker_epoch=1)))
            watch = MetadataWatch(EtcdStore(client, layout))
            own_etcd.pause()  # returns once etcd is stopped
            try:
                start = asyncio.create_task(watch.start())
                while not any("trying again" in r.getMessage() for r in caplog.records):
                    assert not start.done(), start  # gave up instead of trying again
                    await asyncio.sleep(0.05)
            finally:
                own_etcd.resume()
            await asyncio.wait_for(start, 10)
            assert 7 in watch.image.brokers
            await watch.close()
        finally:
            await client.close()

    with caplog.at_level(logging.WARNING, logger="broker.cluster.metadata_watch"):
        run(scenario())
