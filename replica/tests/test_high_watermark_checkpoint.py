"""The replication-offset-checkpoint: a broker restarted on its data starts each partition's
high watermark from the checkpoint (clamped to its log), not from 0 — so as a leader whose
followers have not fetched yet it serves what was committed at once. Real segment logs."""

from __future__ import annotations

import asyncio

from replica.high_watermark_checkpoint import HighWatermarkCheckpoint
from replica.leader_endpoint import TopicPartition
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.replica_manager import ReplicaManager
from segment.kafka.store import SegmentLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.record_batch import parse_header

LEADER = PartitionState(1, 1, 0, (1, 2), (1, 2))
LEADER_AGAIN = PartitionState(1, 2, 1, (1, 2), (1, 2))  # after the restart: a new epoch, same ISR


def no_endpoint(leader: int):
    return None


class Broker:
    """One broker's data dir: its store, one partition, its replica manager."""

    def __init__(self, data_dir) -> None:
        self.store = SegmentLogStore(data_dir)
        log = self.store.open_partition("t", 0, log_config())
        self.partition = Partition("t", 0, log, 1, log_config(), min_insync_replicas=1, lag_time_max_ms=30_000,
                                   lead_alone=False)
        self.replicas = ReplicaManager(1, no_endpoint, lag_time_max_ms=30_000,
                                       hw_checkpoint=HighWatermarkCheckpoint.in_dir(data_dir), checkpoint_interval_ms=50)

    def produce(self, records: int) -> None:
        for i in range(records):
            batch = build_batch([(None, b"v%d" % i)], 0)
            self.partition.append_as_leader(batch, parse_header(batch), acks=-1)
        self.partition.publish()

    async def stop(self) -> None:
        await self.replicas.close()
        self.store.close()


def test_a_restarted_leader_starts_from_the_checkpointed_high_watermark(tmp_path):
    async def scenario():
        first = Broker(tmp_path)
        first.replicas.apply(first.partition, LEADER)
        first.produce(5)
        first.partition.follower_fetched(2, 3)  # the follower holds 3 of the 5: HW 3
        assert first.partition.high_watermark == 3
        await first.stop()  # writes the checkpoint at close

        again = Broker(tmp_path)
        again.replicas.apply(again.partition, LEADER_AGAIN)
        # follower 2 has not fetched from the new incarnation: only the checkpoint knows
        assert again.partition.log_end_offset == 5
        assert again.partition.high_watermark == 3
        await again.stop()

    asyncio.run(scenario())


def test_the_checkpoint_is_written_periodically_and_clamped_to_the_log_on_restore(tmp_path):
    async def scenario():
        first = Broker(tmp_path)
        first.replicas.start()
        first.replicas.apply(first.partition, LEADER)
        first.produce(4)
        first.partition.follower_fetched(2, 4)
        checkpoint = HighWatermarkCheckpoint.in_dir(tmp_path)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10  # the periodic writer (every 50 ms here), not the stop, writes it
        while checkpoint.read() != {TopicPartition("t", 0): 4}:
            assert loop.time() < deadline, checkpoint.read()
            await asyncio.sleep(0.01)
        await first.stop()

        checkpoint.write({TopicPartition("t", 0): 99})  # beyond the log: e.g. a tail lost in a crash
        again = Broker(tmp_path)
        again.replicas.apply(again.partition, PartitionState(2, 2, 1, (1, 2), (1, 2)))  # now a follower
        assert again.partition.high_watermark == 4  # the log end, not 99
        await again.stop()

    asyncio.run(scenario())
