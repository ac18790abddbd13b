"""SharePartition (broker/groups/share/share_partition.py): acquiring, acknowledging, locks running
out, the delivery-count limit, the start offset, and what a snapshot keeps across a restart;
plus a Hypothesis walk checking no offset is ever held by two members or delivered after it is done."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from wire.error_codes import ErrorCode
from broker.groups.share.share_partition import (AckType, AcquiredRange, InvalidAcknowledgement, RecordState,
                                                 SharePartition, StateRange)

LOCK = 1000


def fresh(start: int = 0, limit: int = 3, max_in_flight: int = 100) -> SharePartition:
    return SharePartition(start, LOCK, limit, max_in_flight)


def test_acquire_takes_available_records_once_and_counts_deliveries():
    sp = fresh()
    assert sp.acquire("a", 0, 4, now_ms=0) == [AcquiredRange(0, 4, 1)]
    assert sp.acquire("b", 0, 4, now_ms=0) == []  # all held by a
    assert sp.next_fetch_offset() == 5


def test_accept_and_reject_finish_records_and_move_the_start():
    sp = fresh()
    sp.acquire("a", 0, 3, now_ms=0)
    sp.acknowledge("a", 0, 1, (AckType.ACCEPT,), now_ms=0)
    assert sp.start_offset == 2
    sp.acknowledge("a", 3, 3, (AckType.REJECT,), now_ms=0)
    assert sp.start_offset == 2 and sp.state_of(3) == (RecordState.ARCHIVED, 1)
    sp.acknowledge("a", 2, 2, (AckType.ACCEPT,), now_ms=0)
    assert sp.start_offset == 4


def test_release_makes_a_record_available_again_until_the_delivery_limit_archives_it():
    sp = fresh(limit=3)
    for delivery in (1, 2, 3):
        assert sp.acquire("a", 0, 0, now_ms=0) == [AcquiredRange(0, 0, delivery)]
        sp.acknowledge("a", 0, 0, (AckType.RELEASE,), now_ms=0)
    assert sp.state_of(0) == (RecordState.ACKNOWLEDGED, -1)  # archived, and the start moved past it
    assert sp.start_offset == 1 and sp.acquire("a", 0, 0, now_ms=0) == []


def test_an_expired_lock_returns_records_to_be_acquired_by_another_member():
    sp = fresh()
    sp.acquire("a", 0, 1, now_ms=0)
    assert not sp.expire_locks(LOCK - 1)
    assert sp.expire_locks(LOCK)
    assert sp.acquire("b", 0, 1, now_ms=LOCK) == [AcquiredRange(0, 1, 2)]
    with pytest.raises(InvalidAcknowledgement) as refused:
        sp.acknowledge("a", 0, 0, (AckType.ACCEPT,), now_ms=0)
    assert refused.value.error is ErrorCode.invalid_record_state


def test_a_refused_acknowledgement_changes_nothing():
    sp = fresh()
    sp.acquire("a", 0, 1, now_ms=0)
    with pytest.raises(InvalidAcknowledgement):
        sp.acknowledge("a", 0, 2, (AckType.ACCEPT,), now_ms=0)  # offset 2 never acquired
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and sp.start_offset == 0
    with pytest.raises(InvalidAcknowledgement) as bad:
        sp.acknowledge("a", 0, 1, (1, 1, 1), now_ms=0)  # neither one type nor one per offset
    assert bad.value.error is ErrorCode.invalid_request


def test_per_offset_types_and_gaps():
    sp = fresh()
    sp.acquire("a", 0, 2, now_ms=0)
    sp.acknowledge("a", 0, 2, (AckType.ACCEPT, AckType.GAP, AckType.RELEASE), now_ms=0)
    assert sp.start_offset == 2 and sp.state_of(2) == (RecordState.AVAILABLE, 1)


def test_a_member_gone_releases_only_its_records():
    sp = fresh()
    sp.acquire("a", 0, 1, now_ms=0)
    sp.acquire("b", 2, 3, now_ms=0)
    assert sp.release_member("a")
    assert sp.state_of(0)[0] is RecordState.AVAILABLE and sp.state_of(2)[0] is RecordState.ACQUIRED


def test_the_in_flight_limit_stops_new_records_until_the_start_moves():
    sp = fresh(max_in_flight=3)
    assert sp.acquire("a", 0, 9, now_ms=0) == [AcquiredRange(0, 2, 1)]
    assert sp.next_fetch_offset() is None
    sp.acknowledge("a", 0, 0, (AckType.ACCEPT,), now_ms=0)
    assert sp.next_fetch_offset() == 3 and sp.acquire("a", 3, 9, now_ms=0) == [AcquiredRange(3, 3, 1)]


def test_control_batches_and_deleted_records_are_skipped():
    sp = fresh()
    sp.skip(0, 0)
    assert sp.start_offset == 1
    sp.acquire("a", 1, 4, now_ms=0)
    sp.move_start_to(3)
    assert sp.start_offset == 3 and sp.acquire("b", 0, 4, now_ms=0) == []


def test_a_snapshot_keeps_what_is_done_and_counts_and_frees_the_locks():
    sp = fresh()
    sp.acquire("a", 0, 5, now_ms=0)
    sp.acknowledge("a", 1, 1, (AckType.ACCEPT,), now_ms=0)
    sp.acknowledge("a", 2, 2, (AckType.REJECT,), now_ms=0)
    epoch, start, ranges = sp.snapshot()
    assert start == 0 and ranges == (StateRange(0, 0, RecordState.AVAILABLE, 1),
                                     StateRange(1, 1, RecordState.ACKNOWLEDGED, 1),
                                     StateRange(2, 2, RecordState.ARCHIVED, 1),
                                     StateRange(3, 5, RecordState.AVAILABLE, 1))
    back = SharePartition(start, LOCK, 3, 100, epoch + 1, ranges)
    assert back.acquire("b", 0, 9, now_ms=0) == [AcquiredRange(0, 0, 2), AcquiredRange(3, 5, 2),
                                                  AcquiredRange(6, 9, 1)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["acquire", "ack", "expire", "leave"]), st.sampled_from("ab"),
                          st.integers(0, 12), st.integers(0, 3), st.sampled_from(list(AckType))), max_size=60))
def test_no_offset_is_held_twice_or_delivered_after_it_is_done(steps):
    sp, now = fresh(limit=3, max_in_flight=10), 0
    holder: dict[int, str] = {}
    done: set[int] = set()
    for op, member, first, width, kind in steps:
        now += 300
        if op == "acquire":
            for r in sp.acquire(member, first, first + width, now):
                for o in range(r.first, r.last + 1):
                    assert o not in done and holder.get(o) is None and 1 <= r.delivery_count <= 3
                    holder[o] = member
        elif op == "ack":
            mine = [o for o, m in holder.items() if m == member and first <= o <= first + width]
            for o in mine:
                sp.acknowledge(member, o, o, (kind,), now_ms=now)
                if kind is AckType.RENEW:
                    continue  # still held, under a new lock
                del holder[o]
                if kind is not AckType.RELEASE or sp.state_of(o)[0] in (RecordState.ARCHIVED, RecordState.ACKNOWLEDGED):
                    done.add(o)
        elif op == "expire":
            sp.expire_locks(now)
            holder = {o: m for o, m in holder.items() if sp.state_of(o)[0] is RecordState.ACQUIRED}
        else:
            sp.release_member(member)
            holder = {o: m for o, m in holder.items() if m != member}
        assert not set(holder) & set(range(sp.start_offset)), "the start moved past a held record"
        done |= set(range(sp.start_offset))


def test_renew_extends_the_lock_of_held_records_and_keeps_them_acquired():
    sp = fresh()
    sp.acquire("a", 0, 1, now_ms=0)
    sp.acknowledge("a", 0, 0, (AckType.RENEW,), now_ms=LOCK - 1)
    assert sp.expire_locks(LOCK) and sp.state_of(1) == (RecordState.AVAILABLE, 1)  # 1 was not renewed
    assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and sp.next_deadline_ms() == 2 * LOCK - 1
    with pytest.raises(InvalidAcknowledgement):
        sp.acknowledge("b", 0, 0, (AckType.RENEW,), now_ms=LOCK)  # held by a, not b
    sp.acknowledge("a", 0, 0, (AckType.ACCEPT,), now_ms=LOCK)
    assert sp.start_offset == 1


def test_record_limit_acquires_only_as_many_as_asked():
    sp = fresh()
    assert sp.acquire("a", 0, 9, now_ms=0, limit=3) == [AcquiredRange(0, 2, 1)]
    assert sp.acquire("b", 0, 9, now_ms=0, limit=100) == [AcquiredRange(3, 9, 1)]
