"""`__consumer_offsets` is compacted (issue 15), so a restart replays only the live offsets.

100,000 offset commits (100 groups x 10 partitions x 100 rounds) over a raw pipelined
connection into one `__consumer_offsets` partition of 64 KiB segments; the cleaner compacts
it; after a restart every committed offset reads back the same and the broker's load line
shows far fewer records replayed than were committed. Both layouts.
"""

from __future__ import annotations

import re
import time

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.group_requests import commit, fetch_committed as fetch_group
from compat_tests.helpers.offset_commits import commit_offsets, fetch_committed
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_markers import producer_id, write_marker
from compat_tests.helpers.txn_offsets import OFFSETS_TOPIC, txn_commit
from compat_tests.helpers.waiting import wait_until

ARGS = ["--offsets-topic-partitions", "1", "--offsets-topic-segment-bytes", "65536",
        "--log-cleaner-backoff-ms", "100", "--group-initial-rebalance-delay-ms", "0"]
GROUPS, PARTITIONS, ROUNDS = [f"group-{i}" for i in range(100)], 10, 100
LOADED = re.compile(r"loaded (\d+) groups from (\d+) __consumer_offsets records")
CLEANED = re.compile(r"cleaned __consumer_offsets-0 up to offset (\d+)")


def cleaned_up_to(proc) -> int:
    return max(map(int, CLEANED.findall(proc.log_text())), default=0)


@pytest.mark.parametrize("layout", ["segment", "commitlog"])
def test_restart_replays_only_the_live_offsets(tmp_path, layout):
    proc = BrokerProcess(storage_mode=layout, extra_args=ARGS, workdir=tmp_path)
    try:
        proc.start()
        topic = unique_topic("committed")
        with Client.to(proc) as client:
            client.create_topic(topic, PARTITIONS)
            committed = commit_offsets(client, topic, PARTITIONS, GROUPS, ROUNDS)
        commits = len(GROUPS) * PARTITIONS * ROUNDS
        # Rounds run while the commits arrive; wait for one that reached the last closed
        # segment (the active one, a few hundred records of 64 KiB, is never cleaned).
        _cleaned_past(proc, commits * 0.9, timeout=90)
        time.sleep(0.5)  # a round in progress ends before the stop
        proc.stop()
        since = proc.log_size()
        proc.start()
        with Client.to(proc) as client:
            assert fetch_committed(client, topic, PARTITIONS, GROUPS) == committed
        (groups, replayed), = [tuple(map(int, m)) for m in LOADED.findall(proc.log_text(since))]
        assert groups == len(GROUPS)
        assert replayed < commits / 10, f"{replayed} of {commits} commits replayed"
    finally:
        proc.cleanup()


@pytest.mark.parametrize("layout", ["segment", "commitlog"])
def test_compaction_keeps_transactions_from_changing_committed_offsets(tmp_path, layout):
    """A transaction's offset that is aborted, or still open while the cleaner runs, must not
    take the place of the offset committed before it. As Kafka's cleaner: records of aborted
    transactions supersede nothing and go, and nothing from the last stable offset on is
    cleaned (the open transaction may still abort). Before, the cleaner kept the aborted
    record as its key's latest and dropped the committed one: OffsetFetch answered -1."""
    proc = BrokerProcess(storage_mode=layout, extra_args=ARGS, workdir=tmp_path)
    try:
        proc.start()
        topic, group = unique_topic("txn-committed"), "txn-group"
        aborted, left_open, committed = (topic, 0), (topic, 1), (topic, 2)
        expected = {aborted: (5, "m5"), left_open: (6, "m6"), committed: (70, "txn70")}
        with Client.to(proc) as client:
            client.create_topic(topic, PARTITIONS)
            p1, p2, p3 = producer_id(client), producer_id(client), producer_id(client)
            assert set(commit(client, group, {aborted: 5, left_open: 6, committed: 7}).values()) == {0}
            assert txn_commit(client, group, p1, {aborted: 50}) == {aborted: 0}
            assert write_marker(client, OFFSETS_TOPIC, p1, commit=False) == 0
            assert txn_commit(client, group, p3, {committed: 70}) == {committed: 0}
            assert write_marker(client, OFFSETS_TOPIC, p3, commit=True) == 0
            marked = client.log_end_offset(OFFSETS_TOPIC)
            commit_offsets(client, topic, PARTITIONS, GROUPS[:20], 20)  # closes segments past them
            _cleaned_past(proc, marked)
            # an open transaction holds the cleaner at its first offset, however much follows
            assert txn_commit(client, group, p2, {left_open: 60}) == {left_open: 0}
            held_at = client.log_end_offset(OFFSETS_TOPIC) - 1
            commit_offsets(client, topic, PARTITIONS, GROUPS[20:40], 20)
            _cleaned_past(proc, held_at)  # a round ran, and cleaned up to the open transaction only
            assert cleaned_up_to(proc) == held_at
            assert write_marker(client, OFFSETS_TOPIC, p2, commit=False) == 0
            commit_offsets(client, topic, PARTITIONS, GROUPS[:20], 20)
            _cleaned_past(proc, held_at + 1)  # and past it, once aborted
            assert fetch_group(client, group, list(expected)) == expected
        proc.stop()
        proc.start()
        with Client.to(proc) as client:
            assert fetch_group(client, group, list(expected)) == expected
    finally:
        proc.cleanup()


def _cleaned_past(proc, offset: float, timeout: float = 60) -> None:
    """Wait for a round of the cleaner that reached `offset`."""
    try:
        wait_until(lambda: cleaned_up_to(proc) >= offset, f"a cleaner round past offset {offset:.0f}", timeout=timeout,
                   interval=0.2)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{proc.log_tail()}") from None
