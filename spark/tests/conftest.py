"""Fixtures for the Spark tests: one local[2] SparkSession per test module, and a twinlog broker
started as a real process (compat_tests' BrokerProcess) for every storage mode in STORAGE_MODES.

The session is the expensive part (~10 s of JVM start), so it is module-scoped and shared by the
storage modes; the broker is module-scoped per mode and every test makes its own topics.
"""

from __future__ import annotations

import gc
import os
import tempfile

import pytest
from confluent_kafka import Producer

from compat_tests.helpers.broker_process import STORAGE_MODES, BrokerProcess
from compat_tests.helpers.topics import create_topic, unique_topic


@pytest.fixture(scope="module")
def spark_session():
    from spark.session import local_session

    session = local_session(f"twinlog-tests-{os.getpid()}")
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(scope="module", params=STORAGE_MODES)
def broker(request):
    proc = BrokerProcess(storage_mode=request.param)
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def spark(spark_session, broker):
    return spark_session


@pytest.fixture
def topic_factory(broker):
    def make(prefix: str, partitions: int = 1) -> str:
        return create_topic(broker.bootstrap, unique_topic(prefix), partitions)
    return make


@pytest.fixture
def produce(broker):
    """produce(topic, [dict(value=..., key=..., partition=..., headers=..., timestamp=...)])."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5})

    def send(topic: str, records: list[dict]) -> None:
        errors = []
        for r in records:
            producer.produce(topic, on_delivery=lambda err, _m: err and errors.append(err), **r)
        assert producer.flush(30) == 0
        assert not errors, errors

    yield send
    del producer
    gc.collect()


@pytest.fixture
def workdir():
    with tempfile.TemporaryDirectory(prefix="twinlog-spark-") as d:
        yield d
