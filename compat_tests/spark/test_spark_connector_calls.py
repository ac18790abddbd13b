"""Spark's Kafka connector's exact Java client calls against twinlog (issue 5, part 1).

spark-sql-kafka-0-10 cannot be installed here, so java/SparkConnectorCheck.java makes the calls it
makes on the real Java client (kafka-clients 4.3.0), with its settings: the sink's idempotent
acks=all producer, the driver's Admin describeTopics / listTopics / listOffsets (earliest, latest,
forTimestamp; read_uncommitted), and the executor's consumer (group.id ...-executor, no auto
commit, auto.offset.reset=none, assign -> seek -> poll, seekToBeginning / seekToEnd + position),
including the OFFSET_OUT_OF_RANGE path that failOnDataLoss decides about.
"""

from __future__ import annotations

import base64
import json
import subprocess

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from compat_tests.helpers.java_client import check_command
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

BASE_TS = 1_700_000_000_000


def _run_check(*args: str, timeout: float = 120) -> dict:
    result = subprocess.run(check_command("SparkConnectorCheck", *args), capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"SparkConnectorCheck failed:\n{result.stdout}\n{result.stderr[-4000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def _b(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def test_connector_driver_executor_and_sink_calls(broker):
    partitions, n = 3, 90
    topic = create_topic(broker.bootstrap, unique_topic("spark-connector"), partitions)
    out = _run_check(broker.bootstrap, topic, "roundtrip", str(partitions), str(n))

    per_partition = n // partitions
    assert out["partitions"] == partitions
    assert out["patternMatches"] == [topic]
    assert out["earliest"] == {str(p): 0 for p in range(partitions)}
    assert out["latest"] == {str(p): per_partition for p in range(partitions)}
    assert out["positions"] == {str(p): [0, per_partition] for p in range(partitions)}
    # forTimestamp(BASE_TS + 45): record i has timestamp BASE_TS + i and sits at offset i // 3.
    assert out["forTimestamp"] == {str(p): next(i // partitions for i in range(p, n, partitions) if i >= n // 2)
                                   for p in range(partitions)}

    expected = []
    for i in range(n):
        expected.append({
            "partition": i % partitions, "offset": i // partitions, "timestamp": BASE_TS + i, "timestampType": 0,
            "key": None if i % 5 == 0 else f"k{i}".encode(), "value": f"v{i}".encode(),
            "headers": [["i", str(i).encode()]] if i % 2 else [],
        })
    got = [{**r, "key": _b(r["key"]), "value": _b(r["value"]),
            "headers": [[k, _b(v)] for k, v in r["headers"]]} for r in out["records"]]
    key = lambda r: (r["partition"], r["offset"])  # noqa: E731
    assert sorted(got, key=key) == sorted(expected, key=key)


def _wait_for_log_start(bootstrap: str, topic: str, timeout: float = 30.0) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)

    def moved_start() -> int | None:
        start = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result().offset
        return start if start > 0 else None

    return wait_until(moved_start, f"retention moving the log start of {topic}-0", timeout=timeout, interval=0.2)


def test_offset_out_of_range_after_retention(broker_factory):
    broker = broker_factory("--segment-bytes", "4096", "--retention-bytes", "8192", "--retention-check-ms", "200")
    topic = create_topic(broker.bootstrap, unique_topic("spark-dataloss"), 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 0})
    for i in range(200):
        producer.produce(topic, value=b"x" * 200 + b"%d" % i, partition=0)
        producer.flush(10)  # one batch per record, so segments roll and retention has whole ones to drop
    log_start = _wait_for_log_start(broker.bootstrap, topic)

    out = _run_check(broker.bootstrap, topic, "dataloss")
    assert out["latest"] == 200
    assert out["earliest"] >= log_start > 0
    assert out["failOnDataLoss"] == "OffsetOutOfRangeException"
    assert out["outOfRangeOffset"] == 0
    assert out["resumedAt"] == out["earliest"]
    assert out["readAfterLoss"] == 200 - out["earliest"]
