"""A bounded, seeded fuzz run against a real broker process, once per storage layout.

Thousands of mutated request frames (compat_tests/helpers/frame_fuzzer.py: bit flips, truncation,
lengths and counts set to extremes, nulls, versions out of range, unknown API keys, damaged
record batches with a correct CRC, lying frame sizes) go to the broker over several
connections, while beside them an idempotent acks=all producer and a consumer
(confluent-kafka) write and read a numbered sequence, and a health probe (ApiVersions on a new
connection) runs every PROBE_EVERY seconds. What must hold:

- the broker process is alive at the end and answers a new connection;
- every probe answered, each kept waiting < 1 s by the broker during the run (the wall time less
  the run-queue waits of the two threads, compat_tests/stall_bounds.probe_wait) and after it;
- the pair lost, duplicated and reordered nothing;
- no Python traceback in the broker's log: a bad frame gets a Kafka error, or its connection
  closed with one log line;
- the log stays bounded (repeated lines are rate-limited, broker/observability/log_rate_limit.py).

The seed is printed; TWINLOG_FUZZ_SEED and TWINLOG_FUZZ_FRAMES run other ones, and
`FrameFuzzer(...).frames(n)[i]` rebuilds frame i of a failing run.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from compat_tests.helpers.broker_process import api_versions_roundtrip
from compat_tests.helpers.frame_fuzzer import FrameFuzzer, Fuzzed, build_sample
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.stall_bounds import probe_wait
from compat_tests.helpers.topics import unique_topic
from wire.protocol import SERVED_VERSIONS

pytestmark = pytest.mark.timeout(180)

SEED = int(os.environ.get("TWINLOG_FUZZ_SEED", "20261124"))
FRAMES = int(os.environ.get("TWINLOG_FUZZ_FRAMES", "5000"))
CONNECTIONS = 6
REPLY_WAIT = 0.3  # s: a frame the broker neither answers nor closes on by then (acks=0, a parked
# fetch, a size prefix that claims more than was sent) gets its connection closed by us
PROBE_EVERY = 0.1
CATCH_UP = 20.0  # s the consumer may take to read the last acknowledged records
PROBE_LIMIT = 1.0
LOG_BOUND = 128 << 10  # bytes of broker log for the whole run, start-up included
FUZZ_TOPIC = "fuzz-t"  # every string of every sample request: topic, group, transactional id...


def _samples(batch: bytes):
    return [build_sample(key, version, FUZZ_TOPIC, batch)
            for key, (lo, hi) in sorted(SERVED_VERSIONS.items())
            for version in range(max(lo, 3) if key == 0 else lo, hi + 1)]


class _Sender:
    """One connection's share of the frames; reconnects whenever the broker closes on it."""

    def __init__(self, broker, frames: list[Fuzzed]) -> None:
        self.broker = broker
        self.frames = frames
        self.outcomes: Counter = Counter()
        self.sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        s = socket.create_connection((self.broker.host, self.broker.port), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def _hang_up(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _reply(self) -> str:
        """'answered', 'closed' or 'silent', after one frame was sent."""
        self.sock.settimeout(REPLY_WAIT)
        head = b""
        try:
            while len(head) < 4:
                chunk = self.sock.recv(4 - len(head))
                if not chunk:
                    return "closed"
                head += chunk
            (size,) = struct.unpack(">i", head)
            self.sock.settimeout(10)
            while size > 0:
                chunk = self.sock.recv(min(size, 1 << 20))
                if not chunk:
                    return "closed"
                size -= len(chunk)
            return "answered"
        except (TimeoutError, socket.timeout):
            return "silent"
        except (ConnectionResetError, BrokenPipeError):
            return "closed"

    def run(self) -> None:
        for f in self.frames:
            if self.sock is None:
                self.sock = self._connect()
            try:
                self.sock.sendall(f.data)
            except (ConnectionResetError, BrokenPipeError):
                self.outcomes["closed"] += 1
                self._hang_up()
                continue
            outcome = "incomplete" if f.incomplete else self._reply()
            self.outcomes[outcome] += 1
            if outcome != "answered":
                self._hang_up()
        self._hang_up()


class _Probe(threading.Thread):
    """ApiVersions on a new connection every PROBE_EVERY s; latencies and failures kept."""

    def __init__(self, broker) -> None:
        super().__init__(daemon=True)
        self.broker = broker
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(PROBE_EVERY):
            started = time.monotonic()
            wait = probe_wait(self.broker, timeout=5.0)  # less the machine's run-queue waits
            if wait == float("inf"):
                self.failures.append(f"refused or unanswered after {time.monotonic() - started:.2f} s")
            else:
                self.latencies.append(wait)


class _Pair:
    """An idempotent acks=all producer writing 0, 1, 2, ... and a consumer reading them back."""

    def __init__(self, broker, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "log_level": 2,
                                  "acks": "all", "linger.ms": 2})
        self.consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "fuzz-pair-reader", "log_level": 2,
                                  "enable.auto.commit": False})
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.consumed: list[int] = []
        self.sent = 0
        self.unflushed = 0
        self.stop = threading.Event()
        self.done = threading.Event()  # the producer has flushed

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.append(int(msg.value()))

    def produce(self) -> None:
        while not self.stop.is_set():
            self.producer.produce(self.topic, str(self.sent).encode(), on_delivery=self._delivered)
            self.sent += 1
            self.producer.poll(0.005)
        self.unflushed = self.producer.flush(30)
        self.done.set()

    def consume(self) -> None:
        """Until the producer is done and everything it was told is stored has been read, or
        CATCH_UP s after that if something is missing."""
        self.consumer.assign([TopicPartition(self.topic, 0, 0)])
        deadline = float("inf")
        while time.monotonic() < deadline:
            if self.done.is_set():
                if len(self.consumed) >= len(self.acked):
                    break
                deadline = min(deadline, time.monotonic() + CATCH_UP)
            msg = self.consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                self.consumed.append(int(msg.value()))


def test_fuzzed_frames_leave_the_broker_serving(fresh_broker):
    broker = fresh_broker
    pair_topic = unique_topic("fuzz-pair")
    with Client(broker.host, broker.port) as c:
        c.create_topic(FUZZ_TOPIC, 2)
        c.create_topic(pair_topic, 1)
        assert c.produce(FUZZ_TOPIC, 0, make_batch([b"seed"])).error_code == 0
    frames = FrameFuzzer(_samples(make_batch([b"fuzz", b"frame"])), SERVED_VERSIONS, SEED).frames(FRAMES)
    print(f"fuzz seed {SEED}: {FRAMES} frames over {CONNECTIONS} connections ({broker.storage_mode})")

    probe, pair = _Probe(broker), _Pair(broker, pair_topic)
    senders = [_Sender(broker, frames[i::CONNECTIONS]) for i in range(CONNECTIONS)]
    threads = [threading.Thread(target=s.run, daemon=True) for s in senders]
    producing = threading.Thread(target=pair.produce, daemon=True)
    consuming = threading.Thread(target=pair.consume, daemon=True)
    probe.start(), producing.start(), consuming.start()
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    elapsed = time.monotonic() - started
    pair.stop.set()
    producing.join(40)
    consuming.join(CATCH_UP + 10)
    probe.stop.set()
    probe.join(10)
    pair.consumer.close()

    after = time.monotonic()
    api_versions_roundtrip(broker.host, broker.port, timeout=5.0)
    after = time.monotonic() - after
    outcomes = sum((s.outcomes for s in senders), Counter())
    log = broker.log_text()
    print(f"{FRAMES / elapsed:.0f} frames/s ({elapsed:.1f} s), outcomes {dict(outcomes)}, "
          f"probes {len(probe.latencies)} max {max(probe.latencies, default=0) * 1000:.1f} ms, "
          f"after {after * 1000:.1f} ms, pair {len(pair.acked)} acked {len(pair.consumed)} consumed, "
          f"log {broker.log_size()} bytes / {len(log.splitlines())} lines")

    assert not any(t.is_alive() for t in threads), "a sender is stuck"
    assert broker.is_running(), broker.log_tail(80)
    assert sum(outcomes.values()) == FRAMES
    assert not probe.failures, probe.failures
    assert probe.latencies and max(probe.latencies) < PROBE_LIMIT, sorted(probe.latencies)[-5:]
    assert after < PROBE_LIMIT
    assert not pair.errors and pair.unflushed == 0, (pair.errors[:5], pair.unflushed)
    assert pair.acked == list(range(pair.sent)) and pair.sent > 0, "acknowledged out of order or not at all"
    assert pair.consumed == pair.acked, "the consumer saw a loss, a duplicate or a reordering"
    assert "Traceback" not in log, broker.log_tail(80)
    assert broker.log_size() < LOG_BOUND, broker.log_tail(40)
