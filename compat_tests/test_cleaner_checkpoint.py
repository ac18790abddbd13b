"""cleaner-offset-checkpoint against a real broker: a restarted broker does not clean a
compacted partition again from its start, and goes on from where it stopped when more is
produced. Both layouts (the commitlog layout's compacted file also says how far it is clean;
the segment layout cleaned every compacted log again after each restart before the file)."""

from __future__ import annotations

import re
import time

import pytest

from compat_tests.broker_process import BrokerProcess
from compat_tests.test_compaction import COMPACT, produce_confluent, read_from, wait_until
from compat_tests.topics import create_topic, unique_topic

CLEANED = re.compile(r"cleaned (\S+)-0 up to offset (\d+)")


def rounds_of(proc, topic, since):
    return [int(m.group(2)) for m in CLEANED.finditer(proc.log_text(since)) if m.group(1) == topic]


def settled_rounds(proc, topic, since, quiet=1.0):
    """The rounds logged once none has been added for `quiet` seconds."""
    rounds, still_since = rounds_of(proc, topic, since), time.monotonic()
    while time.monotonic() - still_since < quiet:
        time.sleep(0.1)
        now = rounds_of(proc, topic, since)
        if now != rounds:
            rounds, still_since = now, time.monotonic()
    return rounds


@pytest.mark.parametrize("layout", ["segment", "commitlog"])
def test_a_restarted_broker_does_not_clean_again(tmp_path, layout):
    proc = BrokerProcess(storage_mode=layout, extra_args=["--log-cleaner-backoff-ms", "100"], workdir=tmp_path)
    try:
        proc.start()
        topic = create_topic(proc.bootstrap, unique_topic("compact-ckpt"), configs=COMPACT)
        since = proc.log_size()
        acked = produce_confluent(proc, topic, [(f"k{i % 300}".encode(), b"v" * 100) for i in range(3000)])
        wait_until(lambda: rounds_of(proc, topic, since), what="a cleaning round")
        ends = settled_rounds(proc, topic, since)  # a stop in mid-round would leave it to the restart
        proc.stop()

        since = proc.log_size()
        proc.start()
        time.sleep(2.0)  # 20 cleaner backoffs
        assert rounds_of(proc, topic, since) == [], "the restarted broker cleaned the partition again"

        acked |= produce_confluent(proc, topic, [(f"k{i % 300}".encode(), b"w" * 100) for i in range(3000)])
        wait_until(lambda: rounds_of(proc, topic, since), what="a round over what was produced after the restart")
        assert min(rounds_of(proc, topic, since)) > max(ends)
        view = {k: v for _o, k, v in read_from(proc, topic)}
        assert view == {k: v for k, v in (acked[o] for o in sorted(acked))}
    finally:
        proc.cleanup()
