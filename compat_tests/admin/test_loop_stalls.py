"""Event-loop stalls are measured in /metrics and named in the log (issue 38 item 3), against a
real broker process in both storage layouts.

The stall is real client work: a Metadata request for a topic of 5,000 partitions is built and
encoded on the event loop (the response holds an entry per partition), 40-60 ms on a quiet
2-core machine in either layout. The broker runs with a stall threshold of 10 ms, so each such
Metadata is a stall with margin. The test checks that
- twinlog_event_loop_lag_seconds counts ticks, and observations over 5 ms after the request;
- a warning line says how late a timer ran and names the callback that held the loop: the
  connection's request loop, serving the request.
Stalls the machine's scheduler adds only add lines and observations, so they cannot fail it.
"""

from __future__ import annotations

import re
import urllib.request

import pytest
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

THRESHOLD_MS = 10
PARTITIONS = 5_000
STALL = re.compile(r"event loop stalled: a timer ran (\d+) ms late \(threshold 10 ms; the loop's thread "
                   r"waited \d+ ms for a CPU in the last \d+ ms\); running: (.*)")
# The connection's request loop is the callback; the deepest frame of ours under it follows.
SERVING = "KafkaConnection._serve (broker/net/server.py:"


@pytest.fixture(scope="module")
def stall_broker(storage_mode):
    with BrokerProcess(storage_mode=storage_mode, metrics=True,
                       extra_args=["--event-loop-stall-threshold-ms", str(THRESHOLD_MS)]) as proc:
        yield proc


def lag_histogram(port: int) -> dict[str, float]:
    """twinlog_event_loop_lag_seconds: its buckets by `le`, and `count`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "twinlog_event_loop_lag_seconds"]
    out = {}
    for s in family.samples:
        if s.name.endswith("_bucket"):
            out[s.labels["le"]] = s.value
        elif s.name.endswith("_count"):
            out["count"] = s.value
    return out


def stalls_since(broker, offset: int) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in STALL.finditer(broker.log_text(offset))]


def test_a_heavy_metadata_request_is_a_stall_measured_and_named(stall_broker):
    broker = stall_broker
    topic = unique_topic("wide")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS, timeout=120)
    before = lag_histogram(broker.metrics_port)
    assert before["count"] > 0, "no tick observed"
    offset = broker.log_size()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def a_named_stall():
        described = admin.list_topics(topic, timeout=30).topics[topic]
        assert len(described.partitions) == PARTITIONS
        return [s for s in stalls_since(broker, offset) if s[1].startswith(SERVING)]

    late_ms, running = wait_until(a_named_stall, "a stall line naming the connection's request loop",
                                  timeout=120, interval=0.2)[0]
    assert late_ms >= THRESHOLD_MS, running
    after = lag_histogram(broker.metrics_port)
    over = (after["count"] - after["0.005"]) - (before["count"] - before["0.005"])
    assert after["count"] > before["count"] and over >= 1, (before, after)
