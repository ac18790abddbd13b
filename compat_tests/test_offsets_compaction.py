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

from compat_tests.broker_process import BrokerProcess
from compat_tests.offset_commits import commit_offsets, fetch_committed
from compat_tests.raw_kafka import Client
from compat_tests.topics import unique_topic

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
        deadline = time.monotonic() + 90
        while cleaned_up_to(proc) < commits * 0.9 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert cleaned_up_to(proc) >= commits * 0.9, proc.log_tail()
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
