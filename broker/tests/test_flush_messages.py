"""FlushByCount (flush.messages = N) over random produce sequences: what Kafka promises of it.

- at most N - 1 messages are ever acknowledged without an fsync covering them;
- no more fsyncs than one per N messages;
- N = 1 fsyncs every produce, N = 0 never; partitions count apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from broker.storage.flush_messages import FlushByCount


@dataclass
class Config:
    flush_messages: int


class FakePartition:
    """Only what FlushByCount reads of a Partition: its name and config."""

    def __init__(self, every: int, index: int = 0) -> None:
        self.topic, self.index = "t", index
        self.config = Config(every)


@given(every=st.integers(1, 50), appends=st.lists(st.integers(1, 120), max_size=200))
def test_never_n_messages_without_an_fsync_and_at_most_one_fsync_per_n(every, appends):
    policy, partition = FlushByCount(), FakePartition(every)
    unsynced = fsyncs = 0
    for messages in appends:
        if policy.appended(partition, messages):
            fsyncs, unsynced = fsyncs + 1, 0
        else:
            unsynced += messages
        assert unsynced < every
    assert fsyncs <= sum(appends) // every


@given(appends=st.lists(st.integers(1, 100), min_size=1, max_size=50))
def test_one_fsyncs_every_produce_and_zero_never(appends):
    policy, each, never = FlushByCount(), FakePartition(1), FakePartition(0, index=1)
    assert all(policy.appended(each, m) for m in appends)
    assert not any(policy.appended(never, m) for m in appends)


def test_partitions_count_apart():
    policy, a, b = FlushByCount(), FakePartition(10), FakePartition(10, index=1)
    assert [policy.appended(a, 6), policy.appended(b, 6), policy.appended(a, 4), policy.appended(b, 3)] == [
        False, False, True, False]


def test_a_partition_created_again_under_its_name_counts_from_zero():
    policy, old = FlushByCount(), FakePartition(3)
    assert not policy.appended(old, 2)
    policy.forget(old)  # deleted
    assert len(policy) == 0
    assert not policy.appended(FakePartition(3), 2)  # the old one's 2 messages do not count
