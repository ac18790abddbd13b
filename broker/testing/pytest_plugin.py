"""pytest plugin: the `twinlog_broker` fixture, a real broker per test (broker/testing/twinlog_broker.py),
and `twinlog_container`, one in a container (broker/testing/container.py; needs testcontainers).

Installed with twinlog through the `pytest11` entry point (pyproject.toml), so a project that
depends on twinlog writes

    def test_orders(twinlog_broker):
        twinlog_broker.create_topic("orders", partitions=3)
        producer = Producer({"bootstrap.servers": twinlog_broker.bootstrap_servers})

and chooses the broker's options by overriding `twinlog_broker_options` (keyword arguments of
TwinlogBroker), e.g. `return {"storage_mode": "commitlog", "extra_args": ["--num-partitions", "3"]}`.

`twinlog_container` is the same for the image: override `twinlog_container_options` (keyword
arguments of TwinlogContainer: image, storage_mode, env) and use
`twinlog_container.get_bootstrap_server()`.

When such a test fails, its report gets a "twinlog broker log" section with the broker's last
lines: what the broker said about the failing request is usually the first thing to read.
"""

from __future__ import annotations

import pytest

from broker.testing.twinlog_broker import TwinlogBroker

_LOG_LINES = 80


@pytest.fixture
def twinlog_broker_options() -> dict:
    """Keyword arguments of TwinlogBroker for `twinlog_broker`; override it to change them."""
    return {}


@pytest.fixture
def twinlog_broker(twinlog_broker_options):
    with TwinlogBroker(**twinlog_broker_options) as broker:
        yield broker


@pytest.fixture
def twinlog_container_options() -> dict:
    """Keyword arguments of TwinlogContainer for `twinlog_container`; override it to change them."""
    return {}


@pytest.fixture
def twinlog_container(twinlog_container_options):
    from broker.testing.container import TwinlogContainer  # testcontainers: only for those who use it

    with TwinlogContainer(**twinlog_container_options) as broker:
        yield broker


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    funcargs = getattr(item, "funcargs", {})
    if report.failed and report.when == "call":
        broker = funcargs.get("twinlog_broker")
        if isinstance(broker, TwinlogBroker):
            report.sections.append(("twinlog broker log", broker.log_tail(_LOG_LINES)))
        container = funcargs.get("twinlog_container")
        if container is not None:
            report.sections.append(("twinlog container log", container.log_tail(_LOG_LINES)))
    return report
