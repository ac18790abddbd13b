"""Fixtures of the share-group tests: a broker with short record locks, and ShareCheck JVM members stopped at teardown."""

from __future__ import annotations

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.java_share_members import DELIVERY_LIMIT, LOCK_MS, ShareMember


@pytest.fixture(scope="module")
def share_broker(storage_mode):
    proc = BrokerProcess(storage_mode=storage_mode, extra_args=[
        "--share-auto-offset-reset", "earliest",
        "--group-share-record-lock-duration-ms", str(LOCK_MS),
        "--group-share-delivery-count-limit", str(DELIVERY_LIMIT),
        "--group-share-heartbeat-interval-ms", "1000",
        "--group-share-session-timeout-ms", "20000"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def sbroker(share_broker):
    if not share_broker.is_running():
        share_broker.start()
    return share_broker


@pytest.fixture
def members(tmp_path):
    started: list[ShareMember] = []

    def start(bootstrap: str, name: str, topic: str, group: str, **kw) -> ShareMember:
        m = ShareMember(bootstrap, name, topic, group, tmp_path, **kw)
        started.append(m)
        m.wait_for("started")
        return m

    yield start
    for m in started:
        m.stop()
