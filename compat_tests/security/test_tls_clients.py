"""SSL and SASL_SSL with every real client, over real TLS sockets (issue 17).

One broker for the module (segment layout: TLS lives in the transport, and the fetch path it
changes — file regions read into memory instead of sendfile — is the same for both layouts'
regions), its certificates made per session by broker/security/self_signed_tls.py (a CA, the broker's
certificate for localhost and 127.0.0.1, one client certificate per client), four listeners:

    PLAINTEXT  the BrokerProcess port (its readiness probe speaks plaintext)
    SSL        ssl.client.auth none: clients trust the CA, send no certificate
    MTLS       an SSL listener with ssl.client.auth=required: the client certificate's subject
               DN is the principal (the broker logs it at DEBUG: nothing else shows a principal
               until the authorizer does)
    SASL_SSL   TLS, then SCRAM-SHA-256 / SCRAM-SHA-512

Each client produces then consumes on each of SSL, MTLS, SASL_SSL/SCRAM-SHA-256 and
SASL_SSL/SCRAM-SHA-512, in one test per client.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import subprocess
import time
import uuid

import pytest

from broker.security.self_signed_tls import make_tls_files
from compat_tests.helpers.broker_process import BrokerProcess, api_versions_roundtrip, free_port
from compat_tests.helpers.waiting import wait_until

USER, PASSWORD = "alice", "alice-secret"
CLIENTS = ("kafka-python", "aiokafka", "confluent", "kcat", "java")
SCENARIOS = ("SSL", "MTLS", "SCRAM-SHA-256", "SCRAM-SHA-512")
VALUES = [b"one", b"two", b"three"]


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("tls"), clients=[(c, "eng") for c in CLIENTS])
    plain, ssl_port, mtls, sasl_ssl = (free_port() for _ in range(4))
    proc = BrokerProcess(port=plain, extra_args=[
        "--listeners", f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl_port},MTLS://127.0.0.1:{mtls},"
                       f"SASL_SSL://127.0.0.1:{sasl_ssl}",
        "--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
        "--ssl-keystore-location", str(files.broker_cert), "--ssl-key-location", str(files.broker_key),
        "--ssl-truststore-location", str(files.ca), "--listener-ssl-client-auth", "MTLS=required",
        "--sasl-scram-user", f"SCRAM-SHA-256=[name={USER},password={PASSWORD}]",
        "--sasl-scram-user", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]",
        "--log-level", "DEBUG",
    ])
    proc.files = files
    proc.ports = {"SSL": ssl_port, "MTLS": mtls, "SCRAM-SHA-256": sasl_ssl, "SCRAM-SHA-512": sasl_ssl}
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def _bootstrap(broker, scenario: str) -> str:
    return f"127.0.0.1:{broker.ports[scenario]}"


def _topic(client: str, scenario: str) -> str:
    return f"tls-{client}-{scenario.lower()}-{uuid.uuid4().hex[:6]}"


def _principal_logged(broker, client: str) -> bool:
    return f"on listener MTLS as User:CN={client},OU=eng,O=twinlog" in broker.log_text()


def _each_scenario(broker, client: str, produce_consume) -> None:
    for scenario in SCENARIOS:
        topic = _topic(client, scenario)
        assert produce_consume(scenario, topic) == VALUES, (client, scenario)
    assert _principal_logged(broker, client), broker.log_tail()


def _first(consumer, n: int) -> list[bytes]:
    """The first n values of a kafka-python consumer, without waiting for its timeout after them."""
    got = []
    for message in consumer:
        got.append(message.value)
        if len(got) == n:
            break
    return got


def test_kafka_python(tls_broker):
    from kafka import KafkaConsumer, KafkaProducer
    files = tls_broker.files

    def settings(scenario):
        out = dict(bootstrap_servers=_bootstrap(tls_broker, scenario), ssl_cafile=str(files.ca),
                   security_protocol="SSL")
        if scenario == "MTLS":
            out.update(ssl_certfile=str(files.client_cert("kafka-python")),
                       ssl_keyfile=str(files.client_key("kafka-python")))
        elif scenario.startswith("SCRAM"):
            out.update(security_protocol="SASL_SSL", sasl_mechanism=scenario, sasl_plain_username=USER,
                       sasl_plain_password=PASSWORD)
        return out

    def produce_consume(scenario, topic):
        producer = KafkaProducer(**settings(scenario))
        for v in VALUES:
            producer.send(topic, v).get(20)
        producer.close()
        consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **settings(scenario))
        got = _first(consumer, 3)
        consumer.close()
        return got

    _each_scenario(tls_broker, "kafka-python", produce_consume)


def test_big_fetch_over_tls_reads_regions_in_pieces(tls_broker):
    """1.5 MB of 16 KB records in fetches of up to 1 MB: file regions past SENDFILE_MIN and
    WRITE_BATCH, which plaintext would sendfile, arrive whole and in order over TLS."""
    from kafka import KafkaConsumer, KafkaProducer
    tls = dict(bootstrap_servers=_bootstrap(tls_broker, "SSL"), security_protocol="SSL",
               ssl_cafile=str(tls_broker.files.ca))
    topic = _topic("big", "SSL")
    values = [bytes([i]) * 16384 for i in range(96)]
    producer = KafkaProducer(linger_ms=50, batch_size=1 << 20, max_request_size=4 << 20, **tls)
    for v in values:
        producer.send(topic, v)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000,
                             fetch_max_bytes=1 << 20, max_partition_fetch_bytes=1 << 20, **tls)
    got = _first(consumer, len(values))
    consumer.close()
    assert got == values


def test_aiokafka(tls_broker):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context
    files = tls_broker.files

    def settings(scenario):
        cert = dict(certfile=str(files.client_cert("aiokafka")), keyfile=str(files.client_key("aiokafka")))
        out = dict(bootstrap_servers=_bootstrap(tls_broker, scenario), security_protocol="SSL",
                   ssl_context=create_ssl_context(cafile=str(files.ca), **(cert if scenario == "MTLS" else {})))
        if scenario.startswith("SCRAM"):
            out.update(security_protocol="SASL_SSL", sasl_mechanism=scenario, sasl_plain_username=USER,
                       sasl_plain_password=PASSWORD)
        return out

    async def run(scenario, topic):
        producer = AIOKafkaProducer(**settings(scenario))
        await producer.start()
        try:
            for v in VALUES:
                await producer.send_and_wait(topic, v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **settings(scenario))
        await consumer.start()
        try:
            got = []
            while len(got) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 20)
                got += [m.value for msgs in batch.values() for m in msgs]
            return got
        finally:
            await consumer.stop()

    _each_scenario(tls_broker, "aiokafka", lambda scenario, topic: asyncio.run(run(scenario, topic)))


def _librdkafka_conf(broker, scenario: str, client: str) -> dict:
    files = broker.files
    conf = {"bootstrap.servers": _bootstrap(broker, scenario), "security.protocol": "ssl",
            "ssl.ca.location": str(files.ca)}
    if scenario == "MTLS":
        conf.update({"ssl.certificate.location": str(files.client_cert(client)),
                     "ssl.key.location": str(files.client_key(client))})
    elif scenario.startswith("SCRAM"):
        conf.update({"security.protocol": "sasl_ssl", "sasl.mechanisms": scenario, "sasl.username": USER,
                     "sasl.password": PASSWORD})
    return conf


def test_confluent_kafka(tls_broker):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    def produce_consume(scenario, topic):
        conf = _librdkafka_conf(tls_broker, scenario, "confluent")
        producer = Producer(conf)
        for v in VALUES:
            producer.produce(topic, v)
        assert producer.flush(20) == 0
        consumer = Consumer({**conf, "group.id": topic, "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < 3 and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and m.error() is None:
                    got.append(m.value())
        finally:
            consumer.close()
        return got

    _each_scenario(tls_broker, "confluent", produce_consume)


def test_kcat(tls_broker):
    exe = shutil.which("kcat")
    if exe is None:
        pytest.fail("kcat is not installed: run compat_tests/install_deps.sh")

    def kcat(scenario, *args, input=None):
        conf = _librdkafka_conf(tls_broker, scenario, "kcat")
        options = [a for k, v in conf.items() if k != "bootstrap.servers" for a in ("-X", f"{k}={v}")]
        return subprocess.run([exe, "-b", conf["bootstrap.servers"], *options, *args], input=input,
                              capture_output=True, timeout=60)

    def produce_consume(scenario, topic):
        out = kcat(scenario, "-t", topic, "-P", input=b"\n".join(VALUES) + b"\n")
        assert out.returncode == 0, out.stderr
        out = kcat(scenario, "-t", topic, "-C", "-e", "-o", "beginning", "-c", "3")
        assert out.returncode == 0, out.stderr
        return out.stdout.split(b"\n")[:3]

    _each_scenario(tls_broker, "kcat", produce_consume)


def test_java_client(tls_broker):
    from compat_tests.helpers.java_client import JavaClient, b64, unb64
    files = tls_broker.files

    def config(scenario):
        conf = {"bootstrap.servers": _bootstrap(tls_broker, scenario), "security.protocol": "SSL",
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.ca)}
        if scenario == "MTLS":
            conf.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.client_keystore("java"))})
        elif scenario.startswith("SCRAM"):
            conf.update({"security.protocol": "SASL_SSL", "sasl.mechanism": scenario,
                         "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                             f'username="{USER}" password="{PASSWORD}";'})
        return conf

    def produce_consume(scenario, topic):
        acks = java.call("produce", topic=topic, config={"acks": "all", **config(scenario)},
                         records=[{"partition": 0, "timestamp": None, "key": None, "value": b64(v), "headers": []}
                                  for v in VALUES])
        assert [a.get("offset") for a in acks] == [0, 1, 2], acks
        got = java.call("consume", topic=topic, count=3, seek="beginning", partitions=[0], timeoutMs=20000,
                        config=config(scenario))
        return [unb64(r["value"]) for r in got["records"]]

    java = JavaClient(tls_broker.bootstrap)
    try:
        _each_scenario(tls_broker, "java", produce_consume)
    finally:
        java.close()


# ---- refusals -------------------------------------------------------------------------------

def _api_versions_frame() -> bytes:
    header = struct.pack(">hhih", 18, 0, 7, 3) + b"raw"
    return struct.pack(">i", len(header)) + header


def test_a_plaintext_client_on_a_tls_port_is_closed_with_one_line(tls_broker):
    since = tls_broker.log_size()
    with socket.create_connection(("127.0.0.1", tls_broker.ports["SSL"]), timeout=10) as sock:
        sock.sendall(_api_versions_frame())
        assert sock.recv(100) == b""  # closed, nothing answered
    wait_until(lambda: "TLS handshake failed" in tls_broker.log_text(since), "the failed handshake logged", timeout=5,
               interval=0.05)
    lines = [line for line in tls_broker.log_text(since).splitlines() if "TLS handshake failed" in line]
    assert len(lines) == 1 and "listener SSL" in lines[0], lines
    assert "Traceback" not in tls_broker.log_text(since)
    assert api_versions_roundtrip("127.0.0.1", tls_broker.port)  # the broker is fine


def test_mutual_tls_refuses_a_client_without_a_certificate(tls_broker):
    since = tls_broker.log_size()
    context = ssl.create_default_context(cafile=str(tls_broker.files.ca))
    with socket.create_connection(("127.0.0.1", tls_broker.ports["MTLS"]), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="localhost") as sock:
                # TLS 1.3: the client finishes its side first and learns of the refusal on reading.
                sock.sendall(_api_versions_frame())
                assert sock.recv(100) == b""
        except (ssl.SSLError, ConnectionResetError):
            pass
    wait_until(lambda: "PEER_DID_NOT_RETURN_A_CERTIFICATE" in tls_broker.log_text(since), "the refusal logged",
               timeout=5, interval=0.05)
    assert "listener MTLS: TLS handshake failed: PEER_DID_NOT_RETURN_A_CERTIFICATE" in tls_broker.log_text(since)
    # The same client with its certificate is served.
    context.load_cert_chain(tls_broker.files.client_cert("kcat"), tls_broker.files.client_key("kcat"))
    with context.wrap_socket(socket.create_connection(("127.0.0.1", tls_broker.ports["MTLS"]), timeout=10),
                             server_hostname="localhost") as sock:
        sock.sendall(_api_versions_frame())
        assert struct.unpack(">iih", sock.recv(10)[:10])[1:] == (7, 0)
