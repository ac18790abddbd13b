"""kcat (Debian's kcat 1.7.1, built on its own librdkafka 2.0.2) as a separate process.

kcat cannot set record timestamps when producing, so timestamp exactness is checked on the
consume side (records produced by confluent-kafka with explicit timestamps) and on the produce
side only as "CreateTime, within the produce window". Records kcat produces are read back by
kafka-python with CRC checks, and records kcat consumes are parsed from a length-prefixed -f
format so binary keys and values compare byte for byte.

If kcat is not installed these tests fail (they do not skip): install_deps.sh installs it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from compat_tests.helpers.records import (
    PARTITIONS, Consumed, Rec, Sent, assert_round_trip, assert_values_in_order, round_trip_records)
from compat_tests.helpers.topics import create_topic as create_named_topic, unique_topic

pytestmark = pytest.mark.timeout(120)

CODECS = ["gzip", "snappy", "lz4", "zstd"]
# Partition, offset, timestamp, key length, value length, headers; then the raw key and value.
CONSUME_FORMAT = "%p|%o|%T|%K|%S|%h\n%k%s\n"


def kcat(broker, *args: str, input: bytes | None = None, timeout: float = 60) -> bytes:
    exe = shutil.which("kcat")
    if exe is None:
        pytest.fail("kcat is not installed: run compat_tests/install_deps.sh (apt-get install kcat)")
    proc = subprocess.run([exe, "-b", broker.bootstrap, "-m", "10", *args], input=input,
                          capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"kcat {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stderr.decode(errors='replace')[-3000:]}")
    return proc.stdout


def kcat_consume(broker, topic: str, *args: str) -> list[Consumed]:
    out = kcat(broker, "-C", "-t", topic, "-e", "-q", "-f", CONSUME_FORMAT, *args)
    return parse_consumed(out)


def parse_consumed(out: bytes) -> list[Consumed]:
    records, pos = [], 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        p, o, ts, klen, vlen, headers = out[pos:nl].decode().split("|", 5)
        pos = nl + 1
        key = value = None
        if int(klen) >= 0:
            key, pos = out[pos:pos + int(klen)], pos + int(klen)
        if int(vlen) >= 0:
            value, pos = out[pos:pos + int(vlen)], pos + int(vlen)
        assert out[pos:pos + 1] == b"\n", f"kcat output misparsed at byte {pos}: {out[pos - 20:pos + 20]!r}"
        pos += 1
        records.append(Consumed(int(p), int(o), key, value, parse_headers(headers), int(ts)))
    return records


def parse_headers(text: str) -> tuple:
    if not text:
        return ()
    out = []
    for item in text.split(","):
        name, _, value = item.partition("=")
        out.append((name, value.encode()))
    return tuple(out)


def create_topic(broker, prefix: str, partitions: int) -> str:
    return create_named_topic(broker.bootstrap, unique_topic(prefix), partitions)


def read_with_kafka_python(broker, topic: str, partitions: int, expected: int) -> list[Consumed]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             check_crcs=True)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out: list[Consumed] = []
        deadline = time.monotonic() + 20
        while len(out) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                    m.timestamp, m.timestamp_type) for m in batch)
        for batch in consumer.poll(timeout_ms=300).values():  # anything more is a duplicate
            out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                m.timestamp, m.timestamp_type) for m in batch)
        return out
    finally:
        consumer.close()


def test_metadata_lists_broker_and_partitions(broker):
    topic = create_topic(broker, "kc-meta", PARTITIONS)
    md = json.loads(kcat(broker, "-L", "-J", "-t", topic))
    brokers = {b["id"]: b["name"] for b in md["brokers"]}
    assert list(brokers.values()) == [broker.bootstrap], md["brokers"]
    (t,) = md["topics"]
    assert t["topic"] == topic and "error" not in t, t
    assert sorted(p["partition"] for p in t["partitions"]) == list(range(PARTITIONS))
    assert all(p["leader"] in brokers for p in t["partitions"]), t["partitions"]


def test_produce_exact_bytes_empty_and_null(broker, tmp_path: Path):
    """File arguments are one message each (binary-safe); -K lines carry empty and (-Z) null parts."""
    topic = create_topic(broker, "kc-files", PARTITIONS)
    binary = bytes(range(256)) * 64 + b"\x00\n\r"
    text = "üñí\ncode\n".encode()
    (tmp_path / "binary").write_bytes(binary)
    (tmp_path / "text").write_bytes(text)
    before = int(time.time() * 1000)
    kcat(broker, "-P", "-t", topic, "-p", "1", "-k", "file-key", "-H", "origin=kcat", "-H", "empty=",
         str(tmp_path / "binary"), str(tmp_path / "text"))
    kcat(broker, "-P", "-t", topic, "-p", "1", "-K", ":", input=b"empty-value:\n")
    kcat(broker, "-P", "-t", topic, "-p", "2", "-K", ":", "-Z", input=b"null-value:\n:null-key\n")
    after = int(time.time() * 1000)

    got = read_with_kafka_python(broker, topic, PARTITIONS, 5)
    headers = (("origin", b"kcat"), ("empty", b""))
    assert [(c.partition, c.offset, c.key, c.value, c.headers) for c in got] == [
        (1, 0, b"file-key", binary, headers),
        (1, 1, b"file-key", text, headers),
        (1, 2, b"empty-value", b"", ()),
        (2, 0, b"null-value", None, ()),
        (2, 1, None, b"null-key", ()),
    ]
    for c in got:
        assert c.timestamp_type == 0 and before - 1000 <= c.timestamp <= after + 1000, c


def test_produce_delimited_keyed_messages(broker):
    topic = create_topic(broker, "kc-keyed", PARTITIONS)
    lines = [(f"key-{i % 10}", f"value-{i}") for i in range(300)]
    kcat(broker, "-P", "-t", topic, "-K", "\t", input="".join(f"{k}\t{v}\n" for k, v in lines).encode())
    got = read_with_kafka_python(broker, topic, PARTITIONS, len(lines))
    assert sorted((c.key, c.value) for c in got) == sorted((k.encode(), v.encode()) for k, v in lines)
    partitions_of: dict[bytes, set] = {}
    for c in got:
        partitions_of.setdefault(c.key, set()).add(c.partition)
    assert all(len(ps) == 1 for ps in partitions_of.values()), partitions_of
    for p in range(PARTITIONS):
        offsets = sorted(c.offset for c in got if c.partition == p)
        assert offsets == list(range(len(offsets))), f"partition {p} offsets not dense"
        values = [c.value for c in sorted(got, key=lambda c: c.offset) if c.partition == p]
        assert values == [v.encode() for k, v in lines if any(c.key == k.encode() and c.partition == p
                                                                for c in got)], f"partition {p} order"


def _kcat_safe(recs: list[Rec]) -> list[Rec]:
    """%h prints headers as k=v,k=v: keep header names and values to plain ASCII without , and =."""
    out = []
    for r in recs:
        headers = tuple((re.sub(r"[^a-z0-9-]", "x", k), re.sub(rb"[^a-z0-9-]", b"x", v or b""))
                        for k, v in r.headers)
        out.append(Rec(r.key, r.value, headers, r.timestamp, r.partition))
    return out


def test_consume_exact_records_from_beginning(broker):
    topic = create_topic(broker, "kc-consume", PARTITIONS)
    recs = _kcat_safe(round_trip_records(null_header_values=False))
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50, "enable.idempotence": False})
    acks: dict[int, tuple] = {}
    for i, r in enumerate(recs):
        kwargs = dict(key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp,
                      on_delivery=lambda err, msg, i=i: acks.__setitem__(i, (err, msg.partition(), msg.offset())))
        if r.partition is not None:
            kwargs["partition"] = r.partition
        producer.produce(topic, **kwargs)
    assert producer.flush(30) == 0
    assert all(e is None for e, _, _ in acks.values())
    sent = [Sent(r, acks[i][1], acks[i][2]) for i, r in enumerate(recs)]
    assert_round_trip(sent, kcat_consume(broker, topic, "-o", "beginning"))

    # -J writes payloads raw, so read the JSON envelopes of partition 0, whose records are text.
    out = kcat(broker, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-J")
    envelopes = [json.loads(line) for line in out.decode().splitlines()]
    assert [(e["offset"], e["tstype"], e["ts"]) for e in envelopes] == [
        (s.offset, "create", s.rec.timestamp) for s in sorted(sent, key=lambda s: s.offset) if s.partition == 0]


@pytest.mark.parametrize("codec", CODECS)
def test_compression_round_trip(broker, codec):
    topic = create_topic(broker, f"kc-{codec}", 1)
    values = [f"{codec}-line-{i:05d}-".encode() * (1 + i % 9) for i in range(1000)]
    kcat(broker, "-P", "-t", topic, "-p", "0", "-z", codec, "-X", "linger.ms=100",
         input=b"\n".join(values) + b"\n")
    assert_values_in_order(read_with_kafka_python(broker, topic, 1, len(values)), values)
    assert_values_in_order(kcat_consume(broker, topic, "-p", "0", "-o", "beginning"), values)


def test_idempotent_producer_acks_all(broker):
    topic = create_topic(broker, "kc-idem", 1)
    values = [b"idem-%d" % i for i in range(2000)]
    kcat(broker, "-P", "-t", topic, "-p", "0", "-X", "enable.idempotence=true", "-X", "acks=all",
         "-X", "linger.ms=20", input=b"\n".join(values) + b"\n")
    assert_values_in_order(kcat_consume(broker, topic, "-p", "0", "-o", "beginning"), values)


def test_query_offsets_for_times_and_start_at_timestamp(broker):
    topic = create_topic(broker, "kc-times", 1)
    t0 = 1_760_000_000_000
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1000, "enable.idempotence": False})
    for i in range(10):
        producer.produce(topic, value=b"t%d" % i, partition=0, timestamp=t0 + 10 * i)
    assert producer.flush(30) == 0
    for ts, want in {t0 - 1: 0, t0 + 15: 2, t0 + 40: 4, t0 + 90: 9}.items():
        out = kcat(broker, "-Q", "-t", f"{topic}:0:{ts}").decode()
        m = re.search(r"offset (-?\d+)", out)
        assert m and int(m.group(1)) == want, f"kcat -Q t0{ts - t0:+d}: {out!r}"
    got = kcat_consume(broker, topic, "-p", "0", "-o", f"s@{t0 + 35}")
    assert [(c.offset, c.value, c.timestamp) for c in got] == [(i, b"t%d" % i, t0 + 10 * i) for i in range(4, 10)]


def test_consume_from_offset_inside_compressed_batch(broker):
    topic = create_topic(broker, "kc-middle", 1)
    values = [b"mid-%04d" % i for i in range(1000)]
    kcat(broker, "-P", "-t", topic, "-p", "0", "-z", "lz4", "-X", "linger.ms=200",
         input=b"\n".join(values) + b"\n")
    got = kcat_consume(broker, topic, "-p", "0", "-o", "777", "-c", "5")
    assert [(c.offset, c.value) for c in got] == [(777 + i, values[777 + i]) for i in range(5)]
