"""A full disk costs no acknowledged record, in both layouts (issue 13, items 2 and 3).

The broker's data dir is a 40 MiB tmpfs, mounted for the test (the suite runs as root, as CI
does). A producer sends 256 KiB records with acks=all and no retries until the broker has
refused three in a row; every refusal must be KAFKA_STORAGE_ERROR, and every record that was
acknowledged must then be readable, in order, exactly once, before and after a kill -9 and a
restart on the still-full disk. Deleting the topic frees the space and produce works again.

Two floors: the default way (`--min-free-bytes` 4 MiB: produce is refused while there is still
room for the derived files) and none (`0`: the engines themselves meet ENOSPC, a short write
in the segment layout, a failed fallocate in the commitlog layout). Before the fix the segment
layout acknowledged batches whose bytes the file did not hold (a 40 MB filesystem lost three
acknowledged batches after kill -9), and the commitlog layout closed every connection with an
ENOSPC traceback and died with SIGBUS when restarted.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, TopicPartition

from compat_tests.helpers.broker_process import BrokerProcess, api_versions_roundtrip
from compat_tests.helpers.topics import admin_client, create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(240)

DISK_MB = 40
RECORD = 256 * 1024


@pytest.fixture
def small_disk_broker(request, storage_mode, tmp_path):
    min_free = request.param
    workdir = tmp_path / "broker"
    proc = BrokerProcess(storage_mode=storage_mode, workdir=workdir, extra_args=[
        "--flush-messages", "1", "--segment-bytes", str(4 << 20), "--commitlog-file-bytes", str(4 << 20),
        "--index-hash-slots", "4096", "--index-max-entries", "16384", "--min-free-bytes", str(min_free),
        "--file-delete-delay-ms", "0", "--retention-check-ms", "500",
    ])
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(proc.data_dir)], check=True)
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()
        subprocess.run(["umount", "-l", str(proc.data_dir)], check=False)


def produce_until_refused(broker: BrokerProcess, topic: str, limit: int) -> tuple[list[tuple[int, bytes]], list]:
    """(offset, value) of every acknowledged record, and the errors of the refused ones."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": False,
                         "retries": 0, "linger.ms": 0, "message.max.bytes": 2 * RECORD,
                         "max.in.flight.requests.per.connection": 1, "message.timeout.ms": 20000})
    acked, errors, streak = [], [], 0
    for i in range(limit):
        value = i.to_bytes(4, "big") + os.urandom(RECORD - 4)
        outcome = []
        producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: outcome.append((err, msg)))
        producer.flush(30)
        err, msg = outcome[0]
        if err is None:
            acked.append((msg.offset(), value))
            streak = 0
            continue
        errors.append(err)
        streak += 1
        if streak >= 3:
            break
    return acked, errors


def read_all(broker: BrokerProcess, topic: str, timeout: float = 30.0) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             check_crcs=True, fetch_max_bytes=4 * RECORD, request_timeout_ms=15000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out, deadline = [], time.monotonic() + timeout
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"reading stuck at {consumer.position(tp)} of {end}"
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend((m.offset, m.value) for m in batch)
        return out
    finally:
        consumer.close()


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@pytest.mark.parametrize("small_disk_broker", [4 << 20, 0], indirect=True, ids=["floor-4MiB", "no-floor"])
def test_full_disk_loses_no_acknowledged_record(small_disk_broker):
    broker = small_disk_broker
    topic = unique_topic("full")
    create_topic(broker.bootstrap, topic, 1)
    acked, errors = produce_until_refused(broker, topic, limit=DISK_MB * 4 + 20)

    codes = {e.code() for e in errors}
    assert codes == {KafkaError.KAFKA_STORAGE_ERROR}, f"refusals answered {errors}"
    assert len(acked) >= (DISK_MB - 12) * 4, f"only {len(acked)} records acknowledged on a {DISK_MB} MiB disk"
    assert [o for o, _ in acked] == list(range(len(acked))), "acknowledged offsets are not 0..n-1"

    api_versions_roundtrip(broker.host, broker.port)  # still answering while full
    assert read_all(broker, topic) == acked

    log_text = broker.log_text()
    assert "Traceback" not in log_text, broker.log_tail()

    broker.kill()
    broker.start()  # on the still-full disk: neither SIGBUS nor a refusal to start
    assert read_all(broker, topic) == acked

    admin = admin_client(broker.bootstrap)
    try:
        admin.delete_topics([topic])
    finally:
        admin.close()
    wait_until(lambda: free_bytes(broker.data_dir) >= 16 << 20, "16 MiB free after deleting the topic", timeout=20,
               interval=0.2)
    again = unique_topic("after")
    create_topic(broker.bootstrap, again, 1)
    resumed, errors = produce_until_refused(broker, again, limit=8)
    assert not errors and len(resumed) == 8, f"produce did not resume after the delete: {errors}"
    assert "Traceback" not in broker.log_text(), broker.log_tail()
