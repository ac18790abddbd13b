"""kafka-python 3.0.12 loses a metadata update asked for while a Metadata request is in flight
(kafka_python_suite/metadata_race_fix.py says how, and fixes it for the upstream suite's run).

Made to happen every time: a proxy in front of the broker (its advertised address, so every
connection goes through it) holds each Metadata answer back for HOLD_S, and the consumer
subscribes while its bootstrap request is held. Without the fix it reads nothing; with it, every
record. Should a kafka-python release fix the race, the first test fails: drop the fix then."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer

from compat_tests.helpers.broker_process import BrokerProcess, free_port
from compat_tests.helpers.waiting import wait_until
from compat_tests.kafka_python_suite import metadata_race_fix

HOLD_S = 1.0
METADATA = 3


class MetadataHoldingProxy:
    """Forwards TCP to the broker; holds each Metadata answer back HOLD_S, and counts the
    Metadata requests it has seen."""

    def __init__(self, broker_port: int) -> None:
        self.port, self._broker_port, self.metadata_requests = free_port(), broker_port, 0
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self._broker_port))
            api_keys: dict[int, int] = {}
            threading.Thread(target=self._requests, args=(client, broker, api_keys), daemon=True).start()
            threading.Thread(target=self._answers, args=(broker, client, api_keys), daemon=True).start()

    @staticmethod
    def _frame(sock: socket.socket) -> bytes:
        head = sock.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            raise ConnectionError
        body = sock.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
        return head + body

    def _requests(self, client, broker, api_keys) -> None:
        try:
            while True:
                frame = self._frame(client)
                api_key, _version, correlation = struct.unpack(">hhi", frame[4:12])
                api_keys[correlation] = api_key
                self.metadata_requests += api_key == METADATA
                broker.sendall(frame)
        except OSError:
            broker.close()

    def _answers(self, broker, client, api_keys) -> None:
        try:
            while True:
                frame = self._frame(broker)
                if api_keys.get(struct.unpack(">i", frame[4:8])[0]) == METADATA:
                    time.sleep(HOLD_S)  # the race under test: a Metadata answer held in flight
                client.sendall(frame)
        except OSError:
            client.close()

    def close(self) -> None:
        self._server.close()


@pytest.fixture(scope="module")
def proxied():
    broker_port = free_port()
    proxy = MetadataHoldingProxy(broker_port)
    broker = BrokerProcess(port=broker_port, extra_args=[
        "--listeners", f"PLAINTEXT://127.0.0.1:{broker_port}",
        "--advertised-listeners", f"PLAINTEXT://127.0.0.1:{proxy.port}"])
    try:
        broker.start()
        yield proxy
    finally:
        broker.cleanup()
        proxy.close()


def _read_after_subscribing_mid_bootstrap(proxy: MetadataHoldingProxy) -> int:
    topic = f"race-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{proxy.port}", api_version=(4, 3))
    for i in range(10):
        producer.send(topic, f"m{i}".encode()).get(30)
    producer.close()
    seen = proxy.metadata_requests
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{proxy.port}", group_id=None, api_version=(4, 3),
                             auto_offset_reset="earliest", consumer_timeout_ms=int(3 * HOLD_S * 1000) + 2000)
    try:
        wait_until(lambda: proxy.metadata_requests > seen, what="the consumer's bootstrap Metadata request")
        consumer.subscribe([topic])  # while that request's answer is held
        return sum(1 for _ in consumer)
    finally:
        consumer.close()


def test_without_the_fix_the_consumer_reads_nothing(proxied):
    metadata_race_fix.undo()
    assert _read_after_subscribing_mid_bootstrap(proxied) == 0


def test_with_the_fix_it_reads_every_record(proxied):
    metadata_race_fix.apply()
    try:
        assert _read_after_subscribing_mid_bootstrap(proxied) == 10
    finally:
        metadata_race_fix.undo()
