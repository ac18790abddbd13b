"""Each of the five clients produces and consumes across a leader failover (issue 14).

One cluster (compat_tests/helpers/cluster.py: etcd + three brokers, 2 s sessions) per storage mode
serves the whole module; each test makes its own topic with replication factor 3 and
min.insync.replicas=2 and runs the same scenario with one client:

1. The client's producer, acks=all with idempotence on (all five clients support it), sends
   RECORDS numbered records to partition 0, paced so the run spans the failover.
2. `LeaderKiller` SIGKILLs the partition leader once its high watermark reaches a quarter, i.e.
   while records are in flight, and waits for the controller to elect a new one. Producers we
   pace ourselves hold back the second half of the records until then, so that half is
   certainly sent after the failover; the Java producer (one blocking op, each send awaited)
   stalls on its in-flight record instead.
3. The same producer instance carries on through its own retries and metadata refreshes.
   Every record must be acknowledged, record i at offset i: with idempotence a retried batch
   the dead leader had already replicated is not written twice, so the acknowledged offsets
   alone show there was no duplicate and no gap.
4. The client's own consumer reads the partition from the beginning (bootstrap still naming
   the dead broker) and gets exactly the RECORDS values, in order, nothing more.
5. The killed broker restarts, rejoins the ISR, and all three replicas hold the same bytes.

A failing test shows what each broker logged during it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition as AioTopicPartition
from confluent_kafka import (
    OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition as CkTopicPartition)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KpTopicPartition

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.java_client import JavaClient, b64, unb64
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

RECORDS = 300
KILL_AT_HW = RECORDS // 4
PACE_S = 0.005  # between two sends: RECORDS take >= 1.5 s, so the kill lands mid-way
HW_WAIT_S = 30.0  # for the leader's high watermark to reach KILL_AT_HW
ELECTION_TIMEOUT_S = 30.0
KILLER_DONE_S = HW_WAIT_S + ELECTION_TIMEOUT_S + 5


@pytest.fixture(scope="module", params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param) as c:
        yield c


@pytest.fixture
def topic(cluster):
    """A fresh RF=3, min.insync.replicas=2 topic; afterwards every broker runs again, so a
    test that failed before restarting the one it killed leaves the next test three brokers."""
    name = unique_topic("failover")
    cluster.create_topic(name, 1, 3, {"min.insync.replicas": "2"})
    try:
        yield name
    finally:
        for proc in cluster.brokers.values():
            if not proc.is_running():
                proc.start()
        cluster.wait_for(lambda md: len(md["brokers"]) == len(cluster.brokers), "every broker registered")


@pytest.fixture(scope="module")
def jvm(cluster, tmp_path_factory):
    """One ClientCheck JVM per cluster (a JVM start costs ~1 s), bootstrapped with all three."""
    client = JavaClient(every_broker(cluster), log_dir=tmp_path_factory.mktemp("clientcheck"))
    try:
        assert client.call("version") == "4.3.0", "not the kafka-clients jar this test is written for"
        yield client
    finally:
        client.close()


def every_broker(cluster: Cluster) -> str:
    """The bootstrap list a user would configure: all three, dead or alive."""
    return ",".join(p.bootstrap for p in cluster.brokers.values())


def numbered(client: str) -> list[bytes]:
    return [b"%s-%06d" % (client.encode(), i) for i in range(RECORDS)]


class LeaderKiller:
    """SIGKILLs the partition leader once its high watermark reaches `at_hw`, then waits for
    a new leader; `elected` is set when there is one (or when the kill failed: `error`)."""

    def __init__(self, cluster: Cluster, topic: str, at_hw: int = KILL_AT_HW) -> None:
        self.cluster, self.topic, self.at_hw = cluster, topic, at_hw
        self.killed: int | None = None
        self.new_leader: int | None = None
        self.hw_at_kill: int | None = None
        self.error: BaseException | None = None
        self.elected = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "LeaderKiller":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._thread.join(KILLER_DONE_S)

    def wait_elected(self) -> None:
        """Called by a producer half-way: the rest of its records go to the new leader."""
        self.elected.wait(KILLER_DONE_S)

    def _run(self) -> None:
        try:
            leader = self.cluster.leader(self.topic)
            proc = self.cluster.brokers[leader]
            with Client(proc.host, proc.port) as c:
                def high_watermark_reached() -> tuple[int] | None:  # a tuple, as 0 may be the answer
                    answer = c.list_offset(self.topic, 0, -1)
                    # UNKNOWN_TOPIC_OR_PARTITION while the leader has not applied the image
                    # holding the topic (the metadata came from another broker)
                    hw = answer.offset if answer.error_code == 0 else -1
                    return (hw,) if hw >= self.at_hw else None

                (hw,) = wait_until(high_watermark_reached, f"the leader's high watermark at {self.at_hw}",
                                   timeout=HW_WAIT_S, interval=0.01)
            proc.kill()
            self.killed, self.hw_at_kill = leader, hw
            md = self.cluster.wait_for(lambda md: md["topics"][self.topic][0]["leader"] not in (leader, -1),
                                       f"a leader other than {leader}", timeout=ELECTION_TIMEOUT_S)
            self.new_leader = md["topics"][self.topic][0]["leader"]
        except BaseException as exc:  # reported by check_failover; the producer must not hang
            self.error = exc
        finally:
            self.elected.set()


@dataclass
class Produced:
    offsets: list[int | None] = field(default_factory=list)  # acknowledged offset of record i
    errors: list[str] = field(default_factory=list)


def paced(values: list[bytes], killer: LeaderKiller):
    """The values one by one, PACE_S apart; the second half only once a new leader leads."""
    for i, v in enumerate(values):
        if i == len(values) // 2:
            killer.wait_elected()
        yield v
        time.sleep(PACE_S)  # pacing: records spread across the failover


# ---- the five clients: produce across the kill, then read everything back ---------------------

def kafka_python_produce(cluster, topic, values, killer) -> Produced:
    producer = KafkaProducer(bootstrap_servers=every_broker(cluster), acks="all", enable_idempotence=True,
                             linger_ms=5, request_timeout_ms=10000, delivery_timeout_ms=60000)
    try:
        futures = [producer.send(topic, value=v, partition=0) for v in paced(values, killer)]
        producer.flush(60)
        out = Produced()
        for f in futures:
            try:
                out.offsets.append(f.get(timeout=1).offset)
            except Exception as exc:  # the test reports every failed record
                out.offsets.append(None)
                out.errors.append(repr(exc))
        return out
    finally:
        producer.close(10)


def kafka_python_consume(cluster, topic, count) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=every_broker(cluster), group_id=None, enable_auto_commit=False,
                             check_crcs=True, request_timeout_ms=15000)
    try:
        tp = KpTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out, deadline = [], time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend(m.value for m in batch)
        for batch in consumer.poll(timeout_ms=300).values():  # anything more is a duplicate
            out.extend(m.value for m in batch)
        return out
    finally:
        consumer.close()


async def _aiokafka_produce(cluster, topic, values, killer) -> Produced:
    # aiokafka expires a batch still unsent after request_timeout_ms: it must outlast an election.
    producer = AIOKafkaProducer(bootstrap_servers=every_broker(cluster), acks="all", enable_idempotence=True,
                                linger_ms=5, request_timeout_ms=30000)
    await producer.start()
    try:
        futures = []
        for i, v in enumerate(values):  # paced(), without blocking the event loop
            if i == len(values) // 2:
                await asyncio.to_thread(killer.wait_elected)
            futures.append(await producer.send(topic, value=v, partition=0))
            await asyncio.sleep(PACE_S)
        await producer.flush()
        out = Produced()
        for result in await asyncio.gather(*futures, return_exceptions=True):
            failed = isinstance(result, BaseException)
            out.offsets.append(None if failed else result.offset)
            if failed:
                out.errors.append(repr(result))
        return out
    finally:
        await producer.stop()


async def _aiokafka_consume(cluster, topic, count) -> list[bytes]:
    consumer = AIOKafkaConsumer(bootstrap_servers=every_broker(cluster), group_id=None,
                                enable_auto_commit=False, check_crcs=True, request_timeout_ms=15000)
    await consumer.start()
    try:
        tp = AioTopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        out, deadline = [], time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for msgs in (await consumer.getmany(timeout_ms=200)).values():
                out.extend(m.value for m in msgs)
        for msgs in (await consumer.getmany(timeout_ms=300)).values():  # anything more is a duplicate
            out.extend(m.value for m in msgs)
        return out
    finally:
        await consumer.stop()


def aiokafka_produce(cluster, topic, values, killer) -> Produced:
    return asyncio.run(asyncio.wait_for(_aiokafka_produce(cluster, topic, values, killer), 90))


def aiokafka_consume(cluster, topic, count) -> list[bytes]:
    return asyncio.run(asyncio.wait_for(_aiokafka_consume(cluster, topic, count), 60))


def confluent_produce(cluster, topic, values, killer) -> Produced:
    producer = Producer({"bootstrap.servers": every_broker(cluster), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60000})
    results: dict[int, tuple] = {}

    def delivered(i):
        return lambda err, msg: results.__setitem__(i, (err, msg.offset()))

    for i, v in enumerate(paced(values, killer)):
        producer.produce(topic, value=v, partition=0, on_delivery=delivered(i))
        producer.poll(0)
    assert producer.flush(60) == 0, "records still undelivered after 60 s"
    out = Produced()
    for i in range(len(values)):
        err, offset = results[i]
        out.offsets.append(None if err else offset)
        if err:
            out.errors.append(f"record {i}: {err}")
    return out


def confluent_consume(cluster, topic, count) -> list[bytes]:
    """Until librdkafka reports the partition's end after the expected count."""
    consumer = Consumer({"bootstrap.servers": every_broker(cluster), "group.id": f"unused-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "check.crcs": True,
                         "enable.partition.eof": True})
    try:
        consumer.assign([CkTopicPartition(topic, 0, OFFSET_BEGINNING)])
        out, deadline = [], time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF and len(out) >= count:
                    break
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(msg.error())
                continue
            out.append(msg.value())
        return out
    finally:
        consumer.close()


KCAT_DELIVERED = re.compile(rb"Message delivered to partition 0 \(offset (-?\d+)\)")


def kcat_exe() -> str:
    exe = shutil.which("kcat")
    if exe is None:
        pytest.fail("kcat is not installed: run compat_tests/install_deps.sh (apt-get install kcat)")
    return exe


def kcat_produce(cluster, topic, values, killer) -> Produced:
    """kcat -P reads one record per stdin line; -v -v prints a line per delivery report (with
    its offset) and a failed delivery makes kcat exit 1."""
    proc = subprocess.Popen([kcat_exe(), "-b", every_broker(cluster), "-P", "-t", topic, "-p", "0", "-v", "-v",
                             "-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=5"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        for v in paced(values, killer):
            proc.stdin.write(v + b"\n")
            proc.stdin.flush()
        proc.stdin.close()
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    reader.join(10)
    text = b"".join(stderr)
    out = Produced(offsets=[int(o) for o in KCAT_DELIVERED.findall(text)])
    failed = [line.decode(errors="replace") for line in text.splitlines() if b"Delivery failed" in line]
    if code != 0 or failed:
        out.errors = failed or [f"kcat exited {code}: {text[-2000:].decode(errors='replace')}"]
    return out


def kcat_consume(cluster, topic, count) -> list[bytes]:
    proc = subprocess.run([kcat_exe(), "-b", every_broker(cluster), "-C", "-t", topic, "-p", "0",
                           "-o", "beginning", "-e", "-q", "-f", "%s\n"], capture_output=True, timeout=60)
    assert proc.returncode == 0, f"kcat -C exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}"
    return proc.stdout.splitlines()


def java_produce(jvm, topic, values) -> Produced:
    """One ClientCheck produce op: one KafkaProducer, each send awaited before the next
    (syncEach), so the records keep coming for the whole run, across the kill."""
    acks = jvm.call("produce", topic=topic, syncEach=True,
                    records=[{"partition": 0, "key": None, "value": b64(v), "headers": []} for v in values],
                    config={"acks": "all", "enable.idempotence": "true", "linger.ms": "5",
                            "delivery.timeout.ms": "60000"}, timeout=120)
    return Produced(offsets=[a.get("offset") for a in acks], errors=[a["error"] for a in acks if "error" in a])


def java_consume(jvm, topic, count) -> list[bytes]:
    result = jvm.call("consume", topic=topic, count=count, seek="beginning", partitions=[0], timeoutMs=30000)
    return [unb64(r["value"]) for r in result["records"]]


# ---- the scenario and its checks --------------------------------------------------------------

def replicas_identical(cluster: Cluster, topic: str) -> None:
    cluster.wait_replicas_identical(topic)


def run_failover(cluster: Cluster, topic: str, client: str, produce, consume) -> None:
    """produce(values, killer) -> Produced and consume(count) -> values: one client's halves."""
    marks = {node: proc.log_size() for node, proc in cluster.brokers.items()}
    values = numbered(client)
    killer = LeaderKiller(cluster, topic)
    try:
        with killer:
            produced = produce(values, killer)
        check_failover(cluster, topic, killer, values, produced, consume)
    except Exception as exc:
        logs = "\n".join(f"broker {node}: {proc.log_tail(40, since=marks[node])}"
                         for node, proc in cluster.brokers.items())
        raise AssertionError(f"{client}: {exc}\nkilled broker {killer.killed} at HW {killer.hw_at_kill}, "
                             f"new leader {killer.new_leader}\n{logs}") from exc


def check_failover(cluster: Cluster, topic: str, killer: LeaderKiller, values: list[bytes],
                   produced: Produced, consume) -> None:
    assert killer.error is None, f"the failover did not happen: {killer.error!r}"
    assert killer.hw_at_kill <= len(values) // 2, f"the leader died only at HW {killer.hw_at_kill}"
    assert not produced.errors, f"{len(produced.errors)} records failed, first: {produced.errors[:3]}"
    assert produced.offsets == list(range(len(values))), (
        f"acknowledged offsets are not 0..{len(values) - 1} in order: first differences "
        f"{[(i, o) for i, o in enumerate(produced.offsets) if o != i][:5]}, {len(produced.offsets)} acks")
    consumed = consume(len(values))
    assert consumed == values, (
        f"read {len(consumed)} records ({len(set(consumed))} distinct) for {len(values)} acknowledged; "
        f"first difference at {next((i for i, (a, b) in enumerate(zip(consumed, values)) if a != b), None)}")
    cluster.brokers[killer.killed].start()
    cluster.wait_for(lambda md: len(md["topics"][topic][0]["isr"]) == 3, "the killed broker back in the ISR")
    replicas_identical(cluster, topic)


# ---- one test per client ----------------------------------------------------------------------

def test_kafka_python_follows_leader_failover(cluster, topic):
    run_failover(cluster, topic, "kafka-python",
                 lambda values, killer: kafka_python_produce(cluster, topic, values, killer),
                 lambda count: kafka_python_consume(cluster, topic, count))


def test_aiokafka_follows_leader_failover(cluster, topic):
    run_failover(cluster, topic, "aiokafka",
                 lambda values, killer: aiokafka_produce(cluster, topic, values, killer),
                 lambda count: aiokafka_consume(cluster, topic, count))


def test_confluent_kafka_follows_leader_failover(cluster, topic):
    run_failover(cluster, topic, "confluent-kafka",
                 lambda values, killer: confluent_produce(cluster, topic, values, killer),
                 lambda count: confluent_consume(cluster, topic, count))


def test_kcat_follows_leader_failover(cluster, topic):
    run_failover(cluster, topic, "kcat",
                 lambda values, killer: kcat_produce(cluster, topic, values, killer),
                 lambda count: kcat_consume(cluster, topic, count))


def test_java_client_follows_leader_failover(cluster, topic, jvm):
    run_failover(cluster, topic, "java",
                 lambda values, killer: java_produce(jvm, topic, values),
                 lambda count: java_consume(jvm, topic, count))
