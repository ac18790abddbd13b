"""Data outlives the broker process: clean restart, kill -9 under load, and a torn log tail.

Each test gets its own broker (`fresh_broker`), because it stops and kills it. kill -9 loses
the process but not the page cache, so every acknowledged record must be there afterwards
whatever the fsync policy; what may be lost is only what was never acknowledged. Reads after a
crash go through kafka-python with check_crcs=True, so a half-written batch that the broker
served would raise instead of passing silently.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.records import PARTITIONS, Consumed, Sent, assert_round_trip, round_trip_records
from compat_tests.helpers.topics import admin_client, create_topic, unique_topic, wait_for_partitions
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(180)


def read_everything(broker: BrokerProcess, topic: str, partitions: int, timeout: float = 30.0) -> list[Consumed]:
    """Read every partition from the beginning up to the end offsets the broker reports."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             check_crcs=True, request_timeout_ms=15000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[Consumed] = []
        deadline = time.monotonic() + timeout
        while not all(consumer.position(tp) >= ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (
                f"stuck before end offsets {ends}: positions {[consumer.position(tp) for tp in tps]}")
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                    m.timestamp, m.timestamp_type) for m in batch)
        for batch in consumer.poll(timeout_ms=300).values():
            out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                m.timestamp, m.timestamp_type) for m in batch)
        return out
    finally:
        consumer.close()


def produce_kafka_python(broker: BrokerProcess, topic: str, recs) -> list[Sent]:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False,
                             linger_ms=20, compression_type="gzip",
                             request_timeout_ms=15000, delivery_timeout_ms=30000)
    try:
        futures = [(r, producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                     timestamp_ms=r.timestamp, partition=r.partition)) for r in recs]
        producer.flush(30)
        return [Sent(r, md.partition, md.offset) for r, md in ((r, f.get(30)) for r, f in futures)]
    finally:
        producer.close()


def test_clean_restart_keeps_records_configs_and_offsets(fresh_broker):
    topic = create_topic(fresh_broker.bootstrap, unique_topic("dur-restart"), PARTITIONS,
                         {"retention.ms": "86400000"})
    recs = round_trip_records(null_header_values=False, null_key_and_value=False)
    sent = produce_kafka_python(fresh_broker, topic, recs)
    assert_round_trip(sent, read_everything(fresh_broker, topic, PARTITIONS))

    code = fresh_broker.stop()
    assert code == 0, f"broker exited with {code} on SIGTERM, expected a clean 0"
    fresh_broker.start()

    assert_round_trip(sent, read_everything(fresh_broker, topic, PARTITIONS))
    admin = admin_client(fresh_broker.bootstrap)
    try:
        wait_for_partitions(admin, topic, PARTITIONS)
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        assert described["topic"][topic]["retention.ms"]["value"] == "86400000"
    finally:
        admin.close()

    more = produce_kafka_python(fresh_broker, topic, recs[:3])
    counts = {p: sum(1 for s in sent if s.partition == p) for p in range(PARTITIONS)}
    assert [(s.partition, s.offset) for s in more] == [(r.partition, counts[r.partition] + i)
                                                        for i, r in enumerate(recs[:3])], "offsets did not continue"
    assert_round_trip(sent + more, read_everything(fresh_broker, topic, PARTITIONS))


class AckRecorder:
    """A confluent-kafka producer in a thread; keeps every acknowledged (partition, offset, value)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, tag: str):
        self.acked: list[tuple[int, int, bytes]] = []
        self.attempted: set[bytes] = set()
        self.failed = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._rnd = random.Random(tag)
        self._topic, self._partitions, self._tag = topic, partitions, tag
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                   "enable.idempotence": False, "message.timeout.ms": 8000,
                                   "retries": 0, "compression.type": "lz4",
                                   "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
                                   "log.connection.close": False, "log_level": 2})  # kills are expected
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg):
        with self._lock:
            if err is None:
                self.acked.append((msg.partition(), msg.offset(), msg.value()))
            else:
                self.failed += 1

    def _run(self):
        seq = 0
        while not self._stop.is_set():
            value = f"{self._tag}-{seq:08d}-".encode() + self._rnd.randbytes(self._rnd.randrange(0, 3000))
            try:
                self._producer.produce(self._topic, value=value, partition=seq % self._partitions,
                                       on_delivery=self._delivered)
                self.attempted.add(value)
                seq += 1
            except BufferError:
                self._producer.poll(0.01)
            self._producer.poll(0)

    def start(self):
        self._thread.start()

    def wait_for_acks(self, n: int, timeout: float = 30.0):
        wait_until(lambda: len(self.acked) >= n, f"{n} acks ({self.failed} failed)", timeout=timeout, interval=0.01)

    def finish(self):
        self._stop.set()
        self._thread.join(10)
        # In-flight requests to the dead broker are purged: they end as failed (not acked), which
        # is the truth from the producer's side; whatever of them did reach the log may stay.
        self._producer.purge(in_queue=True, in_flight=True, blocking=False)
        self._producer.flush(15)
        self._producer = None  # librdkafka destroys the handle now, not at some later GC


def test_kill_9_mid_produce_keeps_every_acked_record(fresh_broker):
    partitions = 2
    topic = create_topic(fresh_broker.bootstrap, unique_topic("dur-kill"), partitions)
    all_acked: list[tuple[int, int, bytes]] = []
    attempted: set[bytes] = set()
    for round_no in range(2):
        rec = AckRecorder(fresh_broker.bootstrap, topic, partitions, f"round{round_no}")
        rec.start()
        rec.wait_for_acks(1500 + random.Random(round_no).randrange(1000))  # a seeded point of the load
        fresh_broker.kill()
        wait_until(lambda: rec.failed, "the producer's requests to the dead broker to fail")
        rec.finish()
        all_acked += rec.acked
        attempted |= rec.attempted
        assert rec.acked, "no acknowledgements before the kill: the test proved nothing"
        assert rec.failed, "nothing was in flight when the broker died: the kill was not mid-produce"
        fresh_broker.start()

        got = read_everything(fresh_broker, topic, partitions)
        by_pos = {(c.partition, c.offset): c.value for c in got}
        missing = [(p, o) for p, o, v in all_acked if by_pos.get((p, o)) != v]
        assert not missing, (f"round {round_no}: {len(missing)} of {len(all_acked)} acked records missing "
                             f"or changed after kill -9, first {missing[:5]}")
        for p in range(partitions):
            offsets = sorted(o for (pp, o) in by_pos if pp == p)
            assert offsets == list(range(len(offsets))), f"partition {p}: offsets after recovery are not dense"
        strangers = [pos for pos, v in by_pos.items() if v not in attempted]
        assert not strangers, f"records nobody produced served at {strangers[:5]}"
        assert len(got) == len(by_pos), "a record was served twice"


def test_torn_tail_is_cut_back_to_last_whole_batch():
    """Garbage after the last batch of every segment (.log) file: recovery drops it, keeps the rest.

    Segment engine only: the .log layout is its own. The commitlog engine's variant follows.
    """
    broker = BrokerProcess(storage_mode="segment")
    try:
        broker.start()
        topic = create_topic(broker.bootstrap, unique_topic("dur-torn"), PARTITIONS)
        recs = round_trip_records(null_header_values=False, null_key_and_value=False)
        sent = produce_kafka_python(broker, topic, recs)
        assert broker.stop() == 0

        logs = [p for p in Path(broker.data_dir).rglob("*.log") if topic in str(p) and p.stat().st_size > 0]
        assert logs, f"no non-empty .log segment files for {topic} under {broker.data_dir}"
        rnd = random.Random(7)
        for path in logs:
            with open(path, "ab") as f:
                # A plausible batch header start (base offset, big length) then junk: a torn write.
                f.write((10**6).to_bytes(8, "big") + (5000).to_bytes(4, "big") + rnd.randbytes(700))
        broker.start()
        assert_round_trip(sent, read_everything(broker, topic, PARTITIONS))
        more = produce_kafka_python(broker, topic, recs[:1])
        assert more[0].offset == sum(1 for s in sent if s.partition == recs[0].partition)
        assert_round_trip(sent + more, read_everything(broker, topic, PARTITIONS))
    finally:
        broker.cleanup()


def _commitlog_data_end(data_dir: Path) -> tuple[Path, int]:
    """The newest commitlog file and the position after its last whole MESSAGE unit."""
    from segment.rocket.unit_format import MESSAGE, PREFIX

    files = sorted((Path(data_dir) / "commitlog-store" / "commitlog").iterdir())
    assert files, f"no commitlog files under {data_dir}"
    path, pos = files[-1], 0
    with open(path, "rb") as f:
        while True:
            f.seek(pos)
            size, magic = PREFIX.unpack(f.read(PREFIX.size))
            if magic != MESSAGE or size <= 0:
                return path, pos
            pos += size


def test_commitlog_torn_tail_after_kill_9_is_cut_back():
    """Commitlog engine: after kill -9, a torn unit after the last whole one (a plausible header,
    then junk) is cut by recovery; every acknowledged record is served, the next append takes
    the torn unit's place and survives another restart."""
    broker = BrokerProcess(storage_mode="commitlog")
    try:
        broker.start()
        topic = create_topic(broker.bootstrap, unique_topic("dur-torn-cl"), PARTITIONS)
        recs = round_trip_records(null_header_values=False, null_key_and_value=False)
        sent = produce_kafka_python(broker, topic, recs)
        broker.kill()

        path, end = _commitlog_data_end(broker.data_dir)
        assert end > 0
        from segment.rocket.unit_format import MESSAGE, PREFIX

        with open(path, "r+b") as f:
            f.seek(end)
            f.write(PREFIX.pack(5000, MESSAGE) + random.Random(7).randbytes(700))
        broker.start()
        assert_round_trip(sent, read_everything(broker, topic, PARTITIONS))
        more = produce_kafka_python(broker, topic, recs[:1])
        assert more[0].offset == sum(1 for s in sent if s.partition == recs[0].partition)
        assert broker.stop() == 0
        broker.start()
        assert_round_trip(sent + more, read_everything(broker, topic, PARTITIONS))
    finally:
        broker.cleanup()


def test_the_last_acknowledged_produce_survives_kill_9(fresh_broker):
    """An engine may gather a request's appends in memory (the commitlog does), but the broker
    writes them to the files before it answers: a produce that is acknowledged and followed by
    no other produce, flush or read still outlives kill -9."""
    topic = create_topic(fresh_broker.bootstrap, unique_topic("dur-last"), PARTITIONS)
    sent = produce_kafka_python(fresh_broker, topic, round_trip_records(False, False))
    fresh_broker.kill()
    fresh_broker.start()
    assert_round_trip(sent, read_everything(fresh_broker, topic, PARTITIONS))


def test_data_dir_is_the_only_state(fresh_broker):
    """A broker started on a copy of a stopped broker's data dir serves the same records."""
    import shutil

    topic = create_topic(fresh_broker.bootstrap, unique_topic("dur-copy"), 1)
    sent = produce_kafka_python(fresh_broker, topic, [r for r in round_trip_records(False, False)
                                                      if r.partition == 0])
    assert fresh_broker.stop() == 0
    copy = BrokerProcess(storage_mode=fresh_broker.storage_mode)
    try:
        shutil.rmtree(copy.data_dir)
        shutil.copytree(fresh_broker.data_dir, copy.data_dir)
        copy.start()
        assert_round_trip(sent, read_everything(copy, topic, 1), num_partitions=1)
    finally:
        copy.cleanup()


def test_many_small_segments_survive_restart_and_kill(fresh_broker):
    """segment.bytes=16384 as a topic config: ~20 segments, each restart rebuilds their indexes."""
    topic = create_topic(fresh_broker.bootstrap, unique_topic("dur-segments"), 1, {"segment.bytes": "16384"})
    t0 = 1_780_000_000_000
    n = 3000
    values = [b"seg-%05d-" % i + bytes([i % 251]) * (40 + i % 60) for i in range(n)]

    def produce(start, count):
        producer = KafkaProducer(bootstrap_servers=fresh_broker.bootstrap, acks="all", enable_idempotence=False,
                                 linger_ms=5, batch_size=4096, request_timeout_ms=15000,
                                 delivery_timeout_ms=30000)
        try:
            futures = [producer.send(topic, value=values[i % n], timestamp_ms=t0 + i, partition=0)
                       for i in range(start, start + count)]
            producer.flush(30)
            return [f.get(30).offset for f in futures]
        finally:
            producer.close()

    def check(expected_count, when):
        got = read_everything(fresh_broker, topic, 1)
        assert [(c.offset, c.value, c.timestamp) for c in got] == [
            (i, values[i % n], t0 + i) for i in range(expected_count)], f"records differ {when}"
        consumer = KafkaConsumer(bootstrap_servers=fresh_broker.bootstrap, group_id=None)
        try:
            tp = TopicPartition(topic, 0)
            for target in (t0 - 1, t0 + 1, t0 + 1234, t0 + 2047, t0 + expected_count - 1):
                found = consumer.offsets_for_times({tp: target})[tp]
                want = max(target - t0, 0)
                assert found is not None and (found.offset, found.timestamp) == (want, t0 + want), \
                    f"offsets_for_times(t0{target - t0:+d}) {when}: {found}"
            assert consumer.offsets_for_times({tp: t0 + expected_count})[tp] is None, when
            assert consumer.end_offsets([tp]) == {tp: expected_count}, when
        finally:
            consumer.close()

    assert produce(0, n) == list(range(n))
    if fresh_broker.storage_mode == "segment":
        segments = [p for p in Path(fresh_broker.data_dir).rglob("*.log") if topic in str(p)]
        assert len(segments) >= 10, f"segment.bytes=16384 should roll often; found {len(segments)} .log files"
    check(n, "before restart")
    assert fresh_broker.stop() == 0
    fresh_broker.start()
    check(n, "after SIGTERM restart")
    fresh_broker.kill()
    fresh_broker.start()
    check(n, "after kill -9")
    assert produce(n, 50) == list(range(n, n + 50))
    check(n + 50, "after appending past the recovered end")


def test_topic_changes_survive_restart(fresh_broker):
    """Deleted stays deleted, a re-created name starts empty, added partitions stay added."""
    bootstrap = fresh_broker.bootstrap
    recreated = create_topic(bootstrap, unique_topic("dur-recreate"), 2)
    deleted = create_topic(bootstrap, unique_topic("dur-deleted"), 1)
    grown = create_topic(bootstrap, unique_topic("dur-grown"), 1)
    old = [r for r in round_trip_records(False, False) if r.partition == 0]
    produce_kafka_python(fresh_broker, recreated, old)
    produce_kafka_python(fresh_broker, deleted, old)

    admin = admin_client(bootstrap)
    try:
        admin.delete_topics([recreated, deleted])
        wait_until(lambda: not {recreated, deleted} & set(admin.list_topics()), "both deleted topics gone", timeout=10)
        admin.create_topics({recreated: {"num_partitions": 2, "replication_factor": 1}})
        wait_for_partitions(admin, recreated, 2)
        admin.create_partitions({grown: 3})
        wait_for_partitions(admin, grown, 3)
    finally:
        admin.close()
    assert read_everything(fresh_broker, recreated, 2) == [], "re-created topic shows the old topic's records"
    new = produce_kafka_python(fresh_broker, recreated, old[:1])
    assert [(s.partition, s.offset) for s in new] == [(0, 0)]

    assert fresh_broker.stop() == 0
    fresh_broker.start()
    admin = admin_client(bootstrap)
    try:
        topics = admin.list_topics()
        assert deleted not in topics, "deleted topic came back after restart"
        assert len(wait_for_partitions(admin, grown, 3)) == 3
        wait_for_partitions(admin, recreated, 2)
    finally:
        admin.close()
    assert_round_trip(new, read_everything(fresh_broker, recreated, 2), num_partitions=2)
