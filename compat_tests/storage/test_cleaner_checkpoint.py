"""cleaner-offset-checkpoint against a real broker: a restarted broker does not clean a
compacted partition again from its start, and goes on from where it stopped when more is
produced. Both layouts (the commitlog layout's compacted file also says how far it is clean;
the segment layout cleaned every compacted log again after each restart before the file)."""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.compaction import COMPACT, produce_confluent, read_from
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

CLEANED = re.compile(r"cleaned (\S+)-0 up to offset (\d+)")


def rounds_of(proc, topic, since):
    return [int(m.group(2)) for m in CLEANED.finditer(proc.log_text(since)) if m.group(1) == topic]


RECORDS = 3000
CLOSED_SHARE = 0.9  # the active segment (16 KiB: a batch or two) is never cleaned


def start_compacting(proc, topic: str) -> None:
    """cleanup.policy delete -> compact: the first round then starts with every record in."""
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})  # held: the result needs the handle alive
    admin.incremental_alter_configs([res])[res].result(15)


@pytest.mark.parametrize("layout", ["segment", "commitlog"])
def test_a_restarted_broker_does_not_clean_again(tmp_path, layout):
    proc = BrokerProcess(storage_mode=layout, extra_args=["--log-cleaner-backoff-ms", "100"], workdir=tmp_path)
    try:
        proc.start()
        # Compacted only once all is produced: its first round then reaches the last closed
        # segment and leaves nothing due, so no round is in flight at the stop (one would be left
        # to the restart). Compacted from the start, a round begun mid-produce could pass the
        # wait below and its successor run after the restart (seen on a loaded machine).
        topic = create_topic(proc.bootstrap, unique_topic("compact-ckpt"), configs={**COMPACT, "cleanup.policy": "delete"})
        acked = produce_confluent(proc, topic, [(f"k{i % 300}".encode(), b"v" * 100) for i in range(RECORDS)])
        since = proc.log_size()
        start_compacting(proc, topic)
        ends = wait_until(lambda: [e for e in rounds_of(proc, topic, since) if e >= RECORDS * CLOSED_SHARE],
                          what="a cleaning round up to the last closed segment")
        proc.stop()

        since = proc.log_size()
        proc.start()
        # A topic made after the restart gets cleaned: the cleaner is at work. Had the restart
        # forgotten how far the first topic was clean, that topic, dirty from the start, would
        # have been cleaned in the rounds before the new one had anything to clean.
        control = create_topic(proc.bootstrap, unique_topic("compact-ckpt-control"), configs=COMPACT)
        produce_confluent(proc, control, [(f"k{i % 300}".encode(), b"c" * 100) for i in range(RECORDS)])
        wait_until(lambda: rounds_of(proc, control, since), what="a round over a topic made after the restart")
        assert rounds_of(proc, topic, since) == [], "the restarted broker cleaned the partition again"

        acked |= produce_confluent(proc, topic, [(f"k{i % 300}".encode(), b"w" * 100) for i in range(RECORDS)])
        wait_until(lambda: rounds_of(proc, topic, since), what="a round over what was produced after the restart")
        assert min(rounds_of(proc, topic, since)) > max(ends)
        view = {k: v for _o, k, v in read_from(proc, topic)}
        assert view == {k: v for k, v in (acked[o] for o in sorted(acked))}
    finally:
        proc.cleanup()
