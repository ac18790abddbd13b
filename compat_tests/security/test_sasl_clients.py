"""SASL_PLAINTEXT with every real client: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, produce then
consume; a wrong password ends in the client's authentication error, not a hang; a raw
connection that skips the handshake gets ApiVersions answered and nothing else; Metadata names
the listener the client came in on.

One broker for the module (segment layout: authentication does not touch storage), with two
listeners: SASL_PLAINTEXT (the BrokerProcess port, so its readiness probe — ApiVersions,
allowed before authentication — works unchanged) and PLAINTEXT.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import uuid

import pytest

from compat_tests.helpers.broker_process import BrokerProcess, free_port
from compat_tests.helpers.raw_kafka import Client

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
USER, PASSWORD = "alice", "alice-secret"
JAAS = 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required\n' \
       '  username="admin" password="admin-secret" user_alice="alice-secret"; };\n'


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    users = tmp_path_factory.mktemp("sasl") / "users.jaas"
    users.write_text(JAAS)
    sasl_port, plain_port = free_port(), free_port()
    proc = BrokerProcess(port=sasl_port, extra_args=[
        "--listeners", f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},PLAINTEXT://127.0.0.1:{plain_port}",
        "--advertised-listeners", f"SASL_PLAINTEXT://localhost:{sasl_port},PLAINTEXT://127.0.0.1:{plain_port}",
        "--sasl-plain-users", str(users),
        "--sasl-scram-user", f"SCRAM-SHA-256=[name={USER},password={PASSWORD}]",
        "--sasl-scram-user", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]",
    ])
    proc.plain_port = plain_port
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def _topic(client: str, mechanism: str) -> str:
    return f"sasl-{client}-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"


VALUES = [b"one", b"two", b"three"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(sasl_broker, mechanism):
    from kafka import KafkaConsumer, KafkaProducer
    auth = dict(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    topic = _topic("kafka-python", mechanism)
    producer = KafkaProducer(**auth)
    for v in VALUES:
        producer.send(topic, v).get(20)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **auth)
    assert [m.value for m in consumer][:3] == VALUES
    consumer.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka(sasl_broker, mechanism):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run():
        auth = dict(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                    sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD)
        topic = _topic("aiokafka", mechanism)
        producer = AIOKafkaProducer(**auth)
        await producer.start()
        try:
            for v in VALUES:
                await producer.send_and_wait(topic, v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **auth)
        await consumer.start()
        try:
            got = []
            while len(got) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 20)
                got += [m.value for msgs in batch.values() for m in msgs]
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == VALUES


def _confluent_conf(broker, mechanism: str, password: str = PASSWORD) -> dict:
    return {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": password}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(sasl_broker, mechanism):
    from confluent_kafka import Consumer, Producer
    topic = _topic("confluent", mechanism)
    producer = Producer(_confluent_conf(sasl_broker, mechanism))
    for v in VALUES:
        producer.produce(topic, v)
    assert producer.flush(20) == 0
    consumer = Consumer({**_confluent_conf(sasl_broker, mechanism), "group.id": topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        for _ in range(60):
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) == 3:
                break
    finally:
        consumer.close()
    assert got == VALUES


def _kcat(broker, mechanism: str, *args: str, password: str = PASSWORD, input: bytes | None = None):
    exe = shutil.which("kcat")
    if exe is None:
        pytest.fail("kcat is not installed: run compat_tests/install_deps.sh")
    return subprocess.run([exe, "-b", broker.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
                           "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={USER}",
                           "-X", f"sasl.password={password}", *args],
                          input=input, capture_output=True, timeout=60)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat(sasl_broker, mechanism):
    topic = _topic("kcat", mechanism)
    out = _kcat(sasl_broker, mechanism, "-t", topic, "-P", input=b"\n".join(VALUES) + b"\n")
    assert out.returncode == 0, out.stderr
    out = _kcat(sasl_broker, mechanism, "-t", topic, "-C", "-e", "-o", "beginning", "-c", "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(b"\n")[:3] == VALUES


@pytest.fixture(scope="module")
def java(sasl_broker):
    from compat_tests.helpers.java_client import JavaClient
    client = JavaClient(sasl_broker.bootstrap)
    yield client
    client.close()


def _java_config(mechanism: str, password: str = PASSWORD) -> dict:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{USER}" password="{password}";'}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_java_client(java, mechanism):
    from compat_tests.helpers.java_client import b64, unb64
    topic = _topic("java", mechanism)
    acks = java.call("produce", topic=topic, config={"acks": "all", **_java_config(mechanism)},
                     records=[{"partition": 0, "timestamp": None, "key": None, "value": b64(v), "headers": []}
                              for v in VALUES])
    assert [a.get("offset") for a in acks] == [0, 1, 2], acks
    got = java.call("consume", topic=topic, count=3, seek="beginning", partitions=[0], timeoutMs=20000,
                    config=_java_config(mechanism))
    assert [unb64(r["value"]) for r in got["records"]] == VALUES, got


# ---- refusals -------------------------------------------------------------------------------

def test_wrong_password_is_an_authentication_error_for_every_client(sasl_broker, java):
    from confluent_kafka import KafkaError, Producer

    from compat_tests.helpers.java_client import JavaOpError

    errors = []
    producer = Producer({**_confluent_conf(sasl_broker, "SCRAM-SHA-256", password="wrong"), "error_cb": errors.append})
    for _ in range(40):
        producer.poll(0.25)
        if errors:
            break
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors

    out = _kcat(sasl_broker, "PLAIN", "-L", password="wrong")
    assert out.returncode != 0 and b"uthentication" in out.stderr, out.stderr

    with pytest.raises(JavaOpError, match="SaslAuthenticationException"):
        java.call("listTopics", config=_java_config("SCRAM-SHA-512", password="wrong"), timeout=40)

    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed

    async def aiokafka_login():
        producer = AIOKafkaProducer(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="PLAIN", sasl_plain_username=USER, sasl_plain_password="wrong")
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises((SaslAuthenticationFailed, KafkaConnectionError)):
        asyncio.run(asyncio.wait_for(aiokafka_login(), 30))

    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    with pytest.raises(KafkaError):  # kafka-python retries bootstrap: its error is a timeout after 3 s
        KafkaProducer(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=USER, sasl_plain_password="wrong",
                      bootstrap_timeout_ms=3000)
    assert "failed authentication" in sasl_broker.log_text()


def _frame(api_key: int, version: int, body: bytes = b"", correlation_id: int = 7) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 3) + b"raw"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _reply(sock: socket.socket) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (size,) = struct.unpack(">i", head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


@pytest.mark.parametrize("api_key, version, body", [
    (3, 1, struct.pack(">i", -1)),  # Metadata v1, all topics
    (0, 3, struct.pack(">hhii", -1, 1, 1000, 0)),  # Produce v3, no topics
    (36, 0, struct.pack(">i", 0)),  # SaslAuthenticate before the handshake
    (50, 0, b"\x01\x00"),  # DescribeUserScramCredentials
])
def test_a_connection_that_skips_the_handshake_gets_only_api_versions(sasl_broker, api_key, version, body):
    with socket.create_connection(("127.0.0.1", sasl_broker.port), timeout=10) as sock:
        sock.sendall(_frame(18, 0))
        answer = _reply(sock)
        assert answer is not None and struct.unpack_from(">ih", answer) == (7, 0)  # ApiVersions: no error
        mechanism = b"PLAIN"
        sock.sendall(_frame(api_key, version, body, correlation_id=8))
        assert _reply(sock) is None  # closed without an answer
    # The handshake itself is answered, with the mechanisms on offer.
    with socket.create_connection(("127.0.0.1", sasl_broker.port), timeout=10) as sock:
        sock.sendall(_frame(17, 1, struct.pack(">h", len(mechanism)) + mechanism))
        answer = _reply(sock)
        assert answer is not None and struct.unpack_from(">ih", answer) == (7, 0)
        assert b"SCRAM-SHA-512" in answer
    assert "while waiting for SaslHandshake" in sasl_broker.log_text()


def test_metadata_names_the_listener_the_client_came_in_on(sasl_broker):
    plain = Client("127.0.0.1", sasl_broker.plain_port)
    try:
        (b,) = plain.request(3, 12, topics=None, allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False).brokers
        assert (b.host, b.port) == ("127.0.0.1", sasl_broker.plain_port)
    finally:
        plain.close()
    from confluent_kafka.admin import AdminClient
    md = AdminClient(_confluent_conf(sasl_broker, "PLAIN")).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("localhost", sasl_broker.port)]
