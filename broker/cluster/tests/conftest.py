"""A real etcd for the cluster tests: one process for the whole session, a fresh key prefix for
each test, so tests never see each other's brokers or topics; or one of a test's own, for tests
that pause or restart it. Both are in the root conftest's SYSTEM_FIXTURES: `make test-unit`
leaves their tests to `make test`."""

from __future__ import annotations

import uuid

import pytest

from broker.testing.etcd_process import EtcdProcess


@pytest.fixture(scope="session")
def etcd():
    with EtcdProcess() as process:
        yield process


@pytest.fixture
def prefix() -> str:
    return f"/test-{uuid.uuid4().hex[:12]}/"


@pytest.fixture
def own_etcd(tmp_path):
    with EtcdProcess(workdir=tmp_path) as process:
        yield process
