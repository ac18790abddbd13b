"""What handlers ask of a Partition, on both engines: how far a read goes for whom (follower: the
log end; consumer: the high watermark; read_committed: the last stable offset), ListOffsets'
positions and timestamps within that bound, and DeleteRecords with Kafka's checks."""

from __future__ import annotations

import pytest

from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.partition_errors import DeleteOffsetOutOfRange, NotLeader, RecordsNotDeletable
from replica.readable_partition import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, NO_TIMESTAMP,
                                        FetchIsolation)
from segment.kafka.store import SegmentLogStore
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.record_batch import iter_batches, parse_header

LOG_END, HIGH_WATERMARK, TXN_COMMITTED = FetchIsolation.LOG_END, FetchIsolation.HIGH_WATERMARK, FetchIsolation.TXN_COMMITTED


@pytest.fixture(params=[SegmentLogStore, RocketLogStore], ids=["segment", "commitlog"])
def partition(request, tmp_path):
    """A leader of replicas 1 and 2 holding offsets 0-2 (stamped 1000, 3000, 2000 ms), of which
    follower 2 has fetched offset 0 only: the HW is 1, the log end 3."""
    store = request.param(tmp_path)
    p = Partition("t", 0, store.open_partition("t", 0, log_config()), 1, log_config(), min_insync_replicas=1,
                  lag_time_max_ms=30_000, lead_alone=False)
    p.make_leader(PartitionState(1, 1, 0, (1, 2), (1, 2)))
    for timestamp in (1000, 3000, 2000):
        batch = build_batch([(b"k", b"v")], timestamp)
        p.append_as_leader(batch, parse_header(batch), acks=1)
    p.publish()
    p.follower_fetched(2, 1)
    assert (p.high_watermark, p.log_end_offset) == (1, 3)
    yield p
    store.close()


def _offsets_read(p: Partition, isolation: FetchIsolation, offset: int = 0) -> list[int]:
    """The base offsets of the batches a read from `offset` returns."""
    return [header.base_offset for region in p.read(offset, 1 << 20, isolation)
            for _, header in iter_batches(p.read_bytes(region))]


def test_who_asks_decides_the_isolation():
    assert FetchIsolation.of(2, 0) is LOG_END  # a follower, whatever it says
    assert FetchIsolation.of(-1, 0) is HIGH_WATERMARK
    assert FetchIsolation.of(-1, 1) is TXN_COMMITTED
    assert FetchIsolation.of(-2, 0) is HIGH_WATERMARK  # Kafka's debugging consumer


def test_a_follower_reads_to_the_log_end_and_a_consumer_to_the_high_watermark(partition):
    assert _offsets_read(partition, LOG_END) == [0, 1, 2]
    assert _offsets_read(partition, HIGH_WATERMARK) == [0]
    # no transactions: nothing is open, the last stable offset is the high watermark
    assert partition.last_stable_offset == 1
    assert _offsets_read(partition, TXN_COMMITTED) == [0]


def test_offsets_for_timestamps_stop_where_the_reader_stops(partition):
    assert partition.fetch_offset_for_timestamp(EARLIEST_TIMESTAMP, HIGH_WATERMARK) == (0, NO_TIMESTAMP)
    assert partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP, HIGH_WATERMARK) == (1, NO_TIMESTAMP)
    assert partition.fetch_offset_for_timestamp(LATEST_TIMESTAMP, LOG_END) == (3, NO_TIMESTAMP)
    assert partition.fetch_offset_for_timestamp(1500, LOG_END) == (1, 3000)
    assert partition.fetch_offset_for_timestamp(1500, HIGH_WATERMARK) is None  # offset 1 is not readable yet
    assert partition.fetch_offset_for_timestamp(1000, HIGH_WATERMARK) == (0, 1000)
    assert partition.fetch_offset_for_timestamp(MAX_TIMESTAMP, LOG_END) == (1, 3000)
    assert partition.fetch_offset_for_timestamp(MAX_TIMESTAMP, HIGH_WATERMARK) is None
    assert partition.fetch_offset_for_timestamp(4000, LOG_END) is None


def test_delete_records_goes_up_to_the_high_watermark_and_never_back(partition):
    with pytest.raises(DeleteOffsetOutOfRange):
        partition.delete_records_before(2)  # above the HW
    with pytest.raises(DeleteOffsetOutOfRange):
        partition.delete_records_before(-2)
    assert partition.log_start_offset == 0
    assert partition.delete_records_before(-1) == 1  # -1: the high watermark
    assert partition.log_start_offset == 1
    assert partition.delete_records_before(0) == 1  # below the log start: nothing changes
    assert _offsets_read(partition, LOG_END, offset=1) == [1, 2]


def test_delete_records_needs_the_delete_policy_and_the_leadership(partition):
    partition.update_config(log_config(cleanup_policy="compact"), 1)
    with pytest.raises(RecordsNotDeletable):
        partition.delete_records_before(1)
    partition.update_config(log_config(cleanup_policy="compact,delete"), 1)
    assert partition.delete_records_before(1) == 1
    partition.make_follower(PartitionState(2, 2, 1, (1, 2), (1, 2)))
    with pytest.raises(NotLeader):
        partition.delete_records_before(1)
    assert partition.log_start_offset == 1
