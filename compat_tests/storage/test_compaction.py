"""Log compaction against a real broker (issue 15): real clients, forced cleaning, kill -9.

Parametrized over the layouts that compact (LAYOUTS; the commitlog layout joins when its
cleaner lands). Cleaning is forced with small segments, min.cleanable.dirty.ratio 0 and a
100 ms cleaner backoff.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.compaction import COMPACT, produce_confluent, read_from
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

LAYOUTS = ["segment", "commitlog"]
CLEANER_ARGS = ["--log-cleaner-backoff-ms", "100", "--retention-check-ms", "200"]


@pytest.fixture(scope="module", params=LAYOUTS)
def cleaner_broker(request):
    proc = BrokerProcess(storage_mode=request.param, extra_args=CLEANER_ARGS)
    try:
        yield proc.start()
    finally:
        proc.cleanup()


def produce_kafka_python(broker, topic, records):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
    futures = [(producer.send(topic, key=k, value=v, partition=0), k, v) for k, v in records]
    producer.flush()
    acked = {f.get(timeout=30).offset: (k, v) for f, k, v in futures}
    producer.close()
    return acked


def read_settled(broker, topic):
    """read_from once two reads in a row agree: a round that began while the test produced
    may still be cleaning, and offsets it removes between two reads would move a consumer."""
    reads = [read_from(broker, topic)]

    def two_agree() -> bool:
        reads.append(read_from(broker, topic))
        return reads[-1] == reads[-2]

    wait_until(two_agree, "two reads in a row alike (the cleaner done with the log)", timeout=6, interval=0.3)
    return reads[-1]


def latest(acked):
    view = {}
    for offset in sorted(acked):
        key, value = acked[offset]
        view[key] = value
    return view


def test_latest_value_per_key_offsets_unchanged_tombstones_go(cleaner_broker):
    topic = create_topic(cleaner_broker.bootstrap, unique_topic("compact"), configs=COMPACT)
    since = cleaner_broker.log_size()
    keys = [f"key-{i}".encode() for i in range(2000)]
    acked = produce_confluent(cleaner_broker, topic, [(k, f"v{n}-{k.decode()}".encode()) for n in range(4) for k in keys])
    deleted = keys[:300]
    acked |= produce_kafka_python(cleaner_broker, topic, [(k, None) for k in deleted]
                                  + [(k, f"v9-{k.decode()}".encode()) for k in keys[300:600]])
    acked |= produce_confluent(cleaner_broker, topic, [(f"filler-{i}".encode(), b"f" * 100) for i in range(300)])
    expected = {k: v for k, v in latest(acked).items() if v is not None}

    wait_until(lambda: f"cleaned {topic}-0 up to offset" in cleaner_broker.log_text(since), what="a cleaning round")
    got = read_settled(cleaner_broker, topic)  # nothing more is due until more is produced
    assert len(got) < len(acked) // 2
    assert all(acked[o] == (k, v) for o, k, v in got), "a record changed or moved offset"
    view = {}
    for _o, k, v in got:
        view[k] = v
    assert {k: v for k, v in view.items() if v is not None} == expected

    # A consumer positioned on an offset the cleaner removed moves on to the next one kept.
    removed = min(set(range(max(acked))) - {o for o, *_ in got})
    assert read_from(cleaner_broker, topic, removed)[0][0] == min(o for o, *_ in got if o > removed)

    # Once delete.retention.ms has passed, a round drops the tombstones of the closed segments;
    # each filler makes another round due.
    def tombstones_gone():
        produce_confluent(cleaner_broker, topic, [(f"filler-{i}".encode(), b"g" * 100) for i in range(100)])
        got = read_from(cleaner_broker, topic)
        return not any(v is None for _o, k, v in got if k in set(deleted))

    wait_until(tombstones_gone, what="the tombstones to be cleaned after delete.retention.ms", interval=0.3)


def test_keyless_records_refused_on_a_compacted_topic(cleaner_broker):
    topic = create_topic(cleaner_broker.bootstrap, unique_topic("compact-keyless"), configs=COMPACT)
    producer = Producer({"bootstrap.servers": cleaner_broker.bootstrap, "retries": 0})
    errors = []
    producer.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD


def log_start(broker, topic):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        return consumer.beginning_offsets([tp])[tp]
    finally:
        consumer.close()


def test_time_retention_on_compacted_topics(cleaner_broker):
    """compact,delete: retention removes closed segments; compact alone: nothing goes by time.
    The compact topic is written first, so the retention check that expired the other one's
    records found its records older still."""
    made = {policy: create_topic(cleaner_broker.bootstrap, unique_topic("compact-retention"),
                                 configs={**COMPACT, "cleanup.policy": policy, "retention.ms": "500"})
            for policy in ("compact", "compact,delete")}
    acked = {policy: produce_confluent(cleaner_broker, topic, [(f"k{i % 50}".encode(), b"x" * 200)
                                                                for i in range(400)])
             for policy, topic in made.items()}
    start = wait_until(lambda: log_start(cleaner_broker, made["compact,delete"]),
                       what="retention to remove closed segments of the compact,delete topic")
    assert all(o >= start for o, *_ in read_from(cleaner_broker, made["compact,delete"]))
    assert log_start(cleaner_broker, made["compact"]) == 0
    got = read_from(cleaner_broker, made["compact"])
    assert {k: v for _o, k, v in got} == latest(acked["compact"])


KILLS = 20
# Records sent and not yet answered, at most: an unbounded producer filled librdkafka's queue
# (100,000) faster than a loaded CI machine's broker drained it, and records waiting in the queue
# for 120 s timed out with no broker fault.
MAX_UNANSWERED = 20_000
_WORK_IN_PROGRESS = (".cleaned", ".swap", "compacting")  # both engines' half-done rounds


def _clean_in_progress(data_dir) -> bool:
    return any(part in p.name for p in data_dir.rglob("*") for part in _WORK_IN_PROGRESS)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_kill_during_cleaning_loses_nothing(tmp_path, layout):
    """20 kill -9s at seeded random moments while a producer writes and the cleaner cleans:
    afterwards every record read is one that was sent, every key reads as the last value sent
    for it (the producer retries until each record is acknowledged, one request in flight, so
    offsets follow sending order), and the segment layout's indexes equal a rebuild."""
    proc = BrokerProcess(storage_mode=layout, extra_args=["--log-cleaner-backoff-ms", "50"], workdir=tmp_path)
    rng = random.Random(20261124)
    try:
        proc.start()
        topic = create_topic(proc.bootstrap, unique_topic("compact-kill"), configs=COMPACT)
        sent: list[tuple[bytes, bytes]] = []
        failed = []
        stop = threading.Event()

        def produce() -> None:
            producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 5, "acks": "all",
                                 "batch.num.messages": 100, "max.in.flight.requests.per.connection": 1,
                                 "enable.idempotence": False, "message.timeout.ms": 120_000,
                                 "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})
            answered = [0]

            def delivered(err, _msg) -> None:
                answered[0] += 1
                if err is not None:
                    failed.append(err)

            i = 0
            while not stop.is_set():
                if i - answered[0] >= MAX_UNANSWERED:  # the broker is down or behind: wait for it
                    producer.poll(0.01)
                    continue
                record = (f"k{i % 500}".encode(), f"v{i}".encode() * 10)
                producer.produce(topic, key=record[0], value=record[1], partition=0, on_delivery=delivered)
                sent.append(record)
                producer.poll(0)
                i += 1
                if i % 200 == 0:
                    time.sleep(0.01)  # pacing: the load runs through every kill below
            left = producer.flush(120)
            if left:
                failed.append(f"{left} records never acknowledged")

        writer = threading.Thread(target=produce, daemon=True)
        writer.start()
        caught_mid_round = 0
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.2, 0.6))  # a seeded moment to kill at, not a wait
            caught_mid_round += _clean_in_progress(proc.data_dir)
            proc.kill()
            proc.start()
        after_last = len(sent)
        wait_until(lambda: len(sent) >= after_last + 1000, what="records sent to the broker after its last restart")
        stop.set()
        writer.join(150)
        assert not writer.is_alive() and not failed, failed
        print(f"\n{layout}: {KILLS} kills, {caught_mid_round} with a clean's work files on disk, "
              f"{len(sent)} records sent")
        expected = {}
        for key, value in sent:
            expected[key] = value
        got = read_settled(proc, topic)
        assert {(k, v) for _o, k, v in got} <= set(sent), "a record nobody sent"
        view = {}
        for _o, k, v in got:
            view[k] = v
        assert view == expected, "a key's last acknowledged value is missing"
        proc.stop()
        if layout == "segment":
            from broker.settings.config_from_settings import config_with
            from segment.kafka.store import SegmentLogStore
            config = config_with(data_dir=proc.data_dir, segment_bytes=16384).log_defaults
            plog = SegmentLogStore(proc.data_dir).open_partition(topic, 0, config)
            for seg in plog.segments:  # every index equals the one rebuilt from its log
                entries = (list(seg.index.keys), list(seg.index.values), list(seg.time_index.keys), seg.next_offset)
                seg.recover()
                assert (list(seg.index.keys), list(seg.index.values), list(seg.time_index.keys),
                        seg.next_offset) == entries
    finally:
        proc.cleanup()
