"""The leader's verification guard (KIP-890): a transaction's first batch in a partition is
appended only while the guard made before asking the coordinator still holds; a marker of the
producer in between (its transaction ended meanwhile) refuses the late batch, so it cannot
open a transaction no marker will ever end; under transactions V2 a marker at the guarded
batch's own epoch ended the transaction before it and leaves the guard (Kafka's UnifiedLog).
Both engines."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.partition_errors import InvalidTxnState
from replica.txn_verification import VerificationGuard
from segment.kafka.store import SegmentLogStore
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.record_batch import parse_header

STORES = [SegmentLogStore, RocketLogStore]
PID = 4000


@pytest.fixture(params=STORES, ids=["segment", "commitlog"])
def partition(request):
    with tempfile.TemporaryDirectory() as d:
        store = request.param(Path(d))
        yield Partition("t", 0, store.open_partition("t", 0, log_config()), 1, log_config(), min_insync_replicas=1,
                        lag_time_max_ms=30_000)
        store.close()


def _batch(seq: int, epoch: int = 0):
    batch = build_batch([(b"k", b"v")], 1000, (PID, epoch, seq), True)
    return bytearray(batch), parse_header(batch)


def test_a_verified_first_batch_opens_the_transaction_and_the_next_needs_no_check(partition):
    batch, header = _batch(0)
    assert partition.needs_verification(header)
    guard = partition.start_verification(PID)
    info, _ = partition.append_as_leader(batch, header, 1, verified=guard)
    assert partition.producers.transactions.open_first_offset(PID) == info.first_offset
    batch, header = _batch(1)
    assert not partition.needs_verification(header)
    assert partition.start_verification(PID) is not guard  # settled by the append


def test_a_marker_during_the_check_refuses_the_late_batch(partition):
    batch, header = _batch(0)
    partition.append_as_leader(batch, header, 1)
    late, late_header = _batch(1)
    partition.append_txn_marker(PID, 0, 0, commit=False)  # the transaction ends (aborted)
    guard = partition.start_verification(PID)
    guard.covers(0, epoch_bumps=False)  # transactions V1: the epoch stays across transactions
    partition.append_txn_marker(PID, 0, 0, commit=False)  # a marker lands while the coordinator is asked
    end = partition.log_end_offset
    with pytest.raises(InvalidTxnState):
        partition.append_as_leader(late, late_header, 1, verified=guard)
    assert partition.log_end_offset == end
    assert partition.producers.transactions.open_first_offset(PID) is None


def test_a_retried_check_shares_the_guard_and_a_new_leader_forgets_it(partition):
    first = partition.start_verification(PID)
    assert partition.start_verification(PID) is first
    partition.make_follower(PartitionState(2, 1, 0, (1, 2), (1, 2)))
    assert partition.start_verification(PID) is not first


def test_a_batch_of_the_next_epoch_is_checked_while_the_last_transaction_is_still_open(partition):
    """Transactions V2: the coordinator bumps the epoch at every end, so a batch with the next
    epoch belongs to the producer's next transaction even before the last one's marker is here;
    appending it unchecked would put it in the transaction the coming marker ends."""
    batch, header = _batch(0, epoch=3)
    partition.append_as_leader(batch, header, 1)
    _, next_header = _batch(0, epoch=4)
    assert partition.needs_verification(next_header)
    _, same_header = _batch(1, epoch=3)
    assert not partition.needs_verification(same_header)
    partition.append_txn_marker(PID, 4, 0, commit=True)  # the end, written with the bumped epoch
    assert partition.needs_verification(next_header)  # nothing open now: the next transaction's first batch


def test_a_v2_marker_at_the_guarded_epoch_leaves_the_next_transactions_guard(partition):
    """The next transaction's first batch (epoch 4) is verified while the marker of the one
    before, written with the epoch its end bumped to (4), lands: the batch is the next
    transaction's, appended, and opens it (Kafka keeps the guard: isV2NextTransactionStarted)."""
    batch, header = _batch(0, epoch=3)
    partition.append_as_leader(batch, header, 1)
    nxt, next_header = _batch(0, epoch=4)
    guard = partition.start_verification(PID)
    guard.covers(4, epoch_bumps=True)
    partition.append_txn_marker(PID, 4, 0, commit=True)
    info, _ = partition.append_as_leader(nxt, next_header, 1, verified=guard)
    assert partition.producers.transactions.open_first_offset(PID) == info.first_offset
    assert partition.start_verification(PID) is not guard  # settled by the append


@pytest.mark.parametrize("epoch_bumps, marker_epoch", [(True, 3), (False, 4)], ids=["v2-other-epoch", "v1"])
def test_any_other_marker_still_refuses_the_batch(partition, epoch_bumps, marker_epoch):
    """A V2 guard is left only by a marker of its own epoch; a V1 guard by none (there the
    epoch stays across transactions, so a marker at the batch's epoch ended its transaction)."""
    partition.append_as_leader(*_batch(0, epoch=3), 1)
    late, late_header = _batch(0, epoch=4)
    guard = partition.start_verification(PID)
    guard.covers(4, epoch_bumps=epoch_bumps)
    partition.append_txn_marker(PID, marker_epoch, 0, commit=False)
    end = partition.log_end_offset
    with pytest.raises(InvalidTxnState):
        partition.append_as_leader(late, late_header, 1, verified=guard)
    assert partition.log_end_offset == end


def test_a_guard_keeps_its_first_version_and_its_newest_epoch():
    guard = VerificationGuard(PID)
    guard.covers(4, epoch_bumps=True)
    guard.covers(3, epoch_bumps=False)  # an older batch of the same producer, retried
    assert (guard.epoch, guard.epoch_bumps) == (4, True)
    guard.covers(6, epoch_bumps=True)
    assert guard.epoch == 6
