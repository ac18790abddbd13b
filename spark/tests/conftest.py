"""Fixtures for the Spark tests: one local[2] SparkSession per pytest process, and a twinlog broker
started as a real process (compat_tests' BrokerProcess) for every storage mode in STORAGE_MODES.

The session is the expensive part: a JVM start, then the JIT and Spark's Python worker daemons
warming up, paid again by every new session. So it lives as long as the pytest process, and
under `--dist loadfile` (make test) the files of spark/tests go to one xdist worker as one work
unit (pytest_xdist_make_scheduler below), each file still whole, so that one session serves them
all. A module's streaming queries are stopped at its end. The broker is module-scoped per mode and
every test makes its own topics.
"""

from __future__ import annotations

import gc
import os
import tempfile

import pytest
from confluent_kafka import Producer

from xdist.scheduler import LoadFileScheduling

from compat_tests.helpers.broker_process import STORAGE_MODES, BrokerProcess
from compat_tests.helpers.topics import create_topic, unique_topic

SPARK_TESTS = "spark/tests/"  # as xdist's node ids start, relative to the rootdir


class _SparkTestsAsOneUnit(LoadFileScheduling):
    """--dist loadfile, with all of spark/tests one work unit. xdist hands out the units with the
    most tests first: this one (42 tests, 14th of 285 in make test) starts early in the run."""

    def _split_scope(self, nodeid: str) -> str:
        return SPARK_TESTS if nodeid.startswith(SPARK_TESTS) else super()._split_scope(nodeid)


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: unknown when it is off (-p no:xdist)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return _SparkTestsAsOneUnit(config, log)
    return None  # xdist's own choice


@pytest.fixture(scope="session")
def _process_spark_session():
    from spark.session import local_session

    session = local_session(f"twinlog-tests-{os.getpid()}")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark_session(_process_spark_session):
    yield _process_spark_session
    for query in _process_spark_session.streams.active:
        query.stop()


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
