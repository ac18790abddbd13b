"""The probe's Fetch attack of issue 13 item 5, against both layouts: one small Fetch naming a
partition of many small batches 200 times with max_bytes 2^31-1.

Before: the commitlog layout stalled 56 s (200 reads of 20,000 batches), the segment layout
12.7 s; after the fetch dedupe and fetch.max.bytes one read was left, and it still cost work
per batch on the event loop: the segment read walked every batch header to find where to stop
(0.9 s for 28 MB of 140-byte batches), the commitlog read one consume-queue entry and one
write per batch (0.5 s). A client that gave up meanwhile made the broker write the rest of
the answer into the closed transport (asyncio's 'socket.send() raised exception', 4,000,195
lines in the probe's log) or raise out of sendfile (a traceback).

Now: a health probe (ApiVersions on a new connection, every 10 ms) is answered in < 100 ms
while the attack runs, and a client that leaves mid-answer costs no log line.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from compat_tests.helpers.broker_process import api_versions_roundtrip
from compat_tests.helpers.raw_kafka import Client, RawKafka, build_request, encode_request, fetch_values, make_batch
from compat_tests.helpers.stall_bounds import probe_wait
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import holds_throughout, wait_until

pytestmark = pytest.mark.timeout(180)

BATCHES = 40_000  # 140-byte batches: 5.6 MB, one partition
ATTACKS = 3
STALL_LIMIT = 0.1  # s


def _fill(c: Client, topic: str) -> None:
    """BATCHES one-record batches, 500 produce requests in flight at a time."""
    value = b"v" * 60
    sent = 0
    while sent < BATCHES:
        n = min(500, BATCHES - sent)
        cids = [c.send(build_request(0, 9, transactional_id=None, acks=1, timeout=10_000, topic_data=[
            {"name": topic, "partition_data": [{"index": 0, "records": make_batch([value])}]}]))
            for _ in range(n)]
        for cid in cids:
            c.recv(0, 9, cid)
        sent += n
    assert c.log_end_offset(topic) == BATCHES


def _attack_frame(topic: str) -> bytes:
    values = fetch_values([(topic, [(0, 0, 2**31 - 1)] * 200)], max_bytes=2**31 - 1)
    return encode_request(build_request(1, 12, **values), 1)


def _rss_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))


class _Probe(threading.Thread):
    def __init__(self, broker) -> None:
        super().__init__(daemon=True)
        self.broker = broker
        self.latencies: list[float] = []
        self.rss_peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.latencies.append(probe_wait(self.broker, 60))
            self.rss_peak = max(self.rss_peak, _rss_mib(self.broker.pid))
            time.sleep(0.01)  # the probes' period


@pytest.fixture(scope="module")
def attacked_topic(_module_broker):
    topic = unique_topic("fetch-stall")
    with Client(_module_broker.host, _module_broker.port) as c:
        c.create_topic(topic, 1)
        _fill(c, topic)
    return topic


def test_the_fetch_attack_leaves_the_event_loop_free(broker, attacked_topic):
    frame = _attack_frame(attacked_topic)
    rss_before = _rss_mib(broker.pid)
    worst: list[float] = []
    for _ in range(ATTACKS):
        probe = _Probe(broker)
        probe.start()
        wait_until(lambda: probe.latencies, "a first probe answered")
        started = time.monotonic()
        with RawKafka(broker.host, broker.port, timeout=120) as attacker:
            attacker.send_bytes(frame)
            answered = len(attacker.recv_payload(120))
        took = time.monotonic() - started
        probes_so_far = len(probe.latencies)  # and one whole probe after the answer
        wait_until(lambda: len(probe.latencies) > probes_so_far + 1, "a probe after the answer")
        probe.stop.set()
        probe.join(60)
        worst.append(max(probe.latencies))
    print(f"{broker.storage_mode}: answer {answered} bytes in {took * 1000:.0f} ms; longest probe per attack "
          f"{[round(w * 1000, 1) for w in worst]} ms; RSS {rss_before} -> peak {probe.rss_peak} MiB")
    # The stall is work the broker does on every attack; the machine's noise is not: the
    # quietest attack shows the stall (stall_bounds.py). The loudest shows the machine too (a
    # probe beside the parallel suite waited 0.54 s for a core), so it is printed, not bounded.
    assert min(worst) < STALL_LIMIT, worst


def test_a_client_that_leaves_mid_answer_costs_no_log_line(broker, attacked_topic):
    frame = _attack_frame(attacked_topic)
    since = broker.log_size()
    for delay in (0.0, 0.005, 0.02, 0.05):
        s = socket.create_connection((broker.host, broker.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(frame)
        time.sleep(delay)  # the moment of leaving, part of what the test varies
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, as a client that timed out
    api_versions_roundtrip(broker.host, broker.port, timeout=10)
    holds_throughout(0.5, lambda: "socket.send() raised exception" not in broker.log_text(since),
                     "no log line about the answers' writes to the reset sockets")
    assert "Traceback" not in broker.log_text(since), broker.log_tail(40, since)
