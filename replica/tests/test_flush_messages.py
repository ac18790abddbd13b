"""flush.messages = N (FsyncedEnd.fsync_due) over random produce sequences: what Kafka promises of it.

- at most N - 1 messages are ever acknowledged without an fsync covering them;
- no more fsyncs than one per N messages;
- N = 1 fsyncs every produce, N = 0 never; partitions count apart.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replica.fsynced_end import FsyncedEnd


@given(every=st.integers(1, 50), appends=st.lists(st.integers(1, 120), max_size=200))
def test_never_n_messages_without_an_fsync_and_at_most_one_fsync_per_n(every, appends):
    partition = FsyncedEnd(0)
    unsynced = fsyncs = 0
    for messages in appends:
        if partition.fsync_due(messages, every):
            fsyncs, unsynced = fsyncs + 1, 0
        else:
            unsynced += messages
        assert unsynced < every
    assert fsyncs <= sum(appends) // every


@given(appends=st.lists(st.integers(1, 100), min_size=1, max_size=50))
def test_one_fsyncs_every_produce_and_zero_never(appends):
    each, never = FsyncedEnd(0), FsyncedEnd(0)
    assert all(each.fsync_due(m, 1) for m in appends)
    assert not any(never.fsync_due(m, 0) for m in appends)


def test_partitions_count_apart():
    a, b = FsyncedEnd(0), FsyncedEnd(0)
    assert [a.fsync_due(6, 10), b.fsync_due(6, 10), a.fsync_due(4, 10), b.fsync_due(3, 10)] == [
        False, False, True, False]
