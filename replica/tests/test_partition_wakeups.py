"""Who a leader wakes: a follower's fetch that does not move the high watermark wakes nobody
(before, every follower fetch woke every parked fetch, so two followers' long-polls woke each
other in a loop: 64-68% of a core per broker with an idle 50-partition RF=3 topic, 0.8% after);
an append wakes the parked fetches (followers read up to the LEO); a moved HW wakes consumers'
fetches, never a follower's (it reads to the LEO, which did not move)."""

from __future__ import annotations

import asyncio

from replica.partition import Partition
from replica.partition_state import PartitionState
from segment.kafka.store import SegmentLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.record_batch import parse_header


def test_appends_wake_every_parked_fetch_and_a_moved_high_watermark_only_consumers(tmp_path):
    async def scenario():
        store = SegmentLogStore(tmp_path)
        log = store.open_partition("t", 0, log_config())
        p = Partition("t", 0, log, 1, log_config(), min_insync_replicas=1, lag_time_max_ms=30_000,
                      lead_alone=False)
        p.make_leader(PartitionState(1, 1, 0, (1, 2, 3), (1, 2, 3)))
        loop = asyncio.get_running_loop()

        def parked(follower=False):
            fut = loop.create_future()
            p.add_waiter(fut, follower)
            return fut

        batch = build_batch([(b"k", b"v")], 0)
        p.append_as_leader(batch, parse_header(batch), acks=1)
        p.publish()
        p.follower_fetched(2, 1)
        p.follower_fetched(3, 1)
        assert p.high_watermark == 1

        waiting = parked()
        p.follower_fetched(2, 1)  # nothing new: the HW stays
        p.follower_fetched(3, 1)
        assert not waiting.done(), "a follower fetch that moved nothing woke a parked fetch"

        batch = build_batch([(b"k", b"w")], 0)
        p.append_as_leader(batch, parse_header(batch), acks=1)
        p.publish()
        assert waiting.done(), "an append did not wake the parked fetch"

        waiting, follower = parked(), parked(follower=True)
        p.follower_fetched(2, 2)  # the ISR's lowest LEO is still 1
        assert not waiting.done()
        p.follower_fetched(3, 2)  # now the HW moves to 2
        assert waiting.done() and p.high_watermark == 2
        assert not follower.done(), "a HW move woke a follower's fetch, which reads to the unmoved LEO"

        batch = build_batch([(b"k", b"x")], 0)
        p.append_as_leader(batch, parse_header(batch), acks=1)
        p.publish()
        assert follower.done(), "an append did not wake the follower's parked fetch"
        store.close()

    asyncio.run(scenario())
